#!/usr/bin/env bash
# Installs what examples/python-postgres-rabbitmq needs on Debian, skipping what is already there
# (opt-in: scripts/deps.sh does not call it; the recorder's rabbitmq tests skip without it):
#   RabbitMQ's server (Debian's rabbitmq-server, with Erlang; its own service is not started),
#   PostgreSQL's server (Debian's postgresql), python3,
#   the Python packages pika, psycopg (binary), opentelemetry-sdk and its OTLP/HTTP exporter.
set -euo pipefail

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing+=(rabbitmq-server)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v python3 >/dev/null || missing+=(python3 python3-pip)

if [ ${#missing[@]} -gt 0 ]; then
  echo "rabbitmq: installing ${missing[*]}" >&2
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! python3 -c 'import pika, psycopg, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http' 2>/dev/null; then
  echo "rabbitmq: installing the Python packages" >&2
  python3 -m pip install --quiet pika 'psycopg[binary]' 'opentelemetry-sdk>=1.45' \
    'opentelemetry-exporter-otlp-proto-http>=1.45' 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages pika 'psycopg[binary]' \
      'opentelemetry-sdk>=1.45' 'opentelemetry-exporter-otlp-proto-http>=1.45'
fi
