#!/usr/bin/env bash
# Offline check of docker-compose.yml with the real tool, no Docker engine
# needed: `docker-compose config -q` (Debian's docker-compose, installed with
# apt-get when missing, without the docker.io it only recommends). The schema
# and Dockerfile checks run in `npm test` (src/__tests__/unit/deployment-files.unit.ts).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker-compose >/dev/null 2>&1; then
  SUDO=''
  if [ "$(id -u)" -ne 0 ]; then SUDO='sudo'; fi
  echo "docker-compose is not installed: installing it with apt-get"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends docker-compose
fi

# The file requires JWT_SECRET; a placeholder is enough to parse it. Nothing starts.
placeholder=$(printf 'x%.0s' $(seq 1 40))
JWT_SECRET="${JWT_SECRET:-$placeholder}" docker-compose -f docker-compose.yml config -q
echo "docker-compose.yml is valid for docker-compose $(docker-compose version --short)"
# The cluster profile, as an override of the same file.
JWT_SECRET="${JWT_SECRET:-$placeholder}" RABBITMQ_COOKIE="${RABBITMQ_COOKIE:-$placeholder}" \
  docker-compose -f docker-compose.yml -f docker-compose.cluster.yml config -q
echo "docker-compose.cluster.yml is valid as an override of docker-compose.yml"
