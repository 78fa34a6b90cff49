#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432) and RabbitMQ (127.0.0.1:5672) accept
# connections: starts them if they are stopped, installs them with apt-get if
# they are missing (Debian/Ubuntu); installs Chromium (/usr/bin/chromium) for
# the console's browser tests when it is missing. Safe to run any number of times.
set -euo pipefail

SUDO=''
if [ "$(id -u)" -ne 0 ]; then SUDO='sudo'; fi

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for_port() {
  local name=$1 port=$2
  for _ in $(seq 1 90); do
    if port_open "$port"; then echo "$name is accepting connections on $port"; return 0; fi
    sleep 1
  done
  echo "$name did not start listening on port $port within 90 s" >&2
  return 1
}

apt_install() {
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "$@"
}

ensure_postgres() {
  if port_open 5432; then echo "PostgreSQL is running"; return 0; fi
  local fresh=no
  if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    echo "PostgreSQL is not installed: installing it with apt-get"
    apt_install postgresql
    fresh=yes
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  if [ "$fresh" = yes ]; then
    # The service connects as postgres without a password on loopback only.
    local hba="/etc/postgresql/$version/main/pg_hba.conf"
    $SUDO sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for_port PostgreSQL 5432
}

ensure_rabbitmq() {
  if port_open 5672; then echo "RabbitMQ is running"; return 0; fi
  if ! command -v rabbitmq-server >/dev/null 2>&1 && [ ! -x /usr/sbin/rabbitmq-server ]; then
    echo "RabbitMQ is not installed: installing it with apt-get"
    apt_install rabbitmq-server
  fi
  PATH="$PATH:/usr/sbin"
  $SUDO rabbitmq-server -detached || true
  $SUDO rabbitmqctl await_startup --timeout 90 >/dev/null 2>&1 || true
  wait_for_port RabbitMQ 5672
}

# The console's browser tests drive Debian's Chromium headless (no browser download).
ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then echo "Chromium is installed"; return 0; fi
  echo "Chromium is not installed: installing it with apt-get"
  apt_install chromium
}

ensure_postgres
ensure_rabbitmq
ensure_chromium

# The pooler test runs Debian's PgBouncer in front of its own database.
ensure_pgbouncer() {
  if [ -x /usr/sbin/pgbouncer ]; then echo "PgBouncer is installed"; return 0; fi
  echo "PgBouncer is not installed: installing it with apt-get"
  apt_install pgbouncer
  # The package starts a system instance on 6432; the test starts its own.
  $SUDO service pgbouncer stop >/dev/null 2>&1 || $SUDO pkill -x pgbouncer || true
}

ensure_pgbouncer

# The metrics tests parse the exposition text with Prometheus's promtool.
ensure_promtool() {
  if [ -x /usr/bin/promtool ]; then echo "promtool is installed"; return 0; fi
  echo "promtool is not installed: installing Debian's prometheus package with apt-get"
  apt_install prometheus
  # The package starts a Prometheus server; only its promtool is needed.
  $SUDO service prometheus stop >/dev/null 2>&1 || $SUDO pkill -x prometheus || true
}

ensure_promtool
