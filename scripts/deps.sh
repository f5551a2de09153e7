#!/usr/bin/env bash
# Installs what outbox-trace needs on Debian, skipping what is already there:
#   services the recorder starts: etcd, nats-server, redis-server
#   build: protoc (for etcd-client)
#   tests: docker-compose (validates compose.yaml, no engine needed), pyarrow (a second Parquet reader),
#          opentelemetry-sdk >= 1.45, opentelemetry-exporter-otlp-json-file >= 0.66b1, the OTLP
#          exporters over HTTP (protobuf) and gRPC >= 1.45, and redis >= 5 (examples/otel-python
#          under `recorder run --system`, and the OpenTelemetry producers the suite runs),
#          chromium and playwright (the HTML report's browser test: Debian's Chromium, driven from
#          Python; Playwright's own browsers are never downloaded),
#          duckdb, datafusion and pyspark with a Java runtime (openjdk-17-jre-headless): the engines
#          `analyzer sql` is checked on, xmllint (libxml2-utils: the JUnit XML of `analyzer check
#          --junit` checked against the schema CI reporters read)
#   the book: mdbook (cargo install, without its server: `mdbook build docs`)
#   examples/node-postgres: PostgreSQL's server (Debian's postgresql), openssl (a certificate for
#          its TLS test), Node.js and npm, and the example's npm packages (npm ci, from its
#          package-lock.json)
#   examples/python-kafka: tansu (a Kafka-compatible broker, built from crates.io once per machine:
#          about 25 to 36 minutes on 2 cores; skipped when tansu TANSU_VERSION is on PATH), and the
#          Python packages confluent-kafka (its wheels carry librdkafka) and psycopg
set -euo pipefail

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v nats-server >/dev/null || missing+=(nats-server)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v python3 >/dev/null || missing+=(python3 python3-pip)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v openssl >/dev/null || missing+=(openssl)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v xmllint >/dev/null || missing+=(libxml2-utils)

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

for package in pyarrow duckdb datafusion pyspark; do
  if ! python3 -c "import $package" 2>/dev/null; then
    echo "deps: installing $package" >&2
    python3 -m pip install -q "$package" 2>/dev/null \
      || python3 -m pip install -q --break-system-packages "$package"
  fi
done

otel_python=(
  'opentelemetry-sdk>=1.45'
  'opentelemetry-exporter-otlp-json-file>=0.66b1'
  'opentelemetry-exporter-otlp-proto-http>=1.45'
  'opentelemetry-exporter-otlp-proto-grpc>=1.45'
  'redis>=5'
)
if ! python3 -c 'import opentelemetry.sdk, opentelemetry.exporter.otlp.json.file, opentelemetry.exporter.otlp.proto.http.trace_exporter, opentelemetry.exporter.otlp.proto.grpc.trace_exporter, redis' 2>/dev/null; then
  echo "deps: installing ${otel_python[*]}" >&2
  python3 -m pip install -q "${otel_python[@]}" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "${otel_python[@]}"
fi

if ! python3 -c 'import playwright' 2>/dev/null; then
  echo "deps: installing playwright" >&2
  python3 -m pip install -q playwright 2>/dev/null \
    || python3 -m pip install -q --break-system-packages playwright
fi

if ! command -v cargo-nextest >/dev/null && ! cargo nextest --version >/dev/null 2>&1; then
  echo "deps: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest
fi

# The book (docs/): mdbook's binary, without its server and file watcher.
if ! command -v mdbook >/dev/null && [ ! -x "$HOME/.cargo/bin/mdbook" ]; then
  echo "deps: installing mdbook" >&2
  cargo install --locked --no-default-features --features search mdbook
fi

# A Kafka-compatible broker: tansu, with its SQLite storage (a broker's log survives its restart).
TANSU_VERSION=0.6.0
if ! tansu --version 2>/dev/null | grep -qF "$TANSU_VERSION"; then
  echo "deps: building tansu $TANSU_VERSION (25 to 36 minutes on 2 cores, once per machine)" >&2
  cargo install --locked --version "$TANSU_VERSION" --no-default-features \
    --features libsql,dynostore tansu
fi
if ! python3 -c 'import confluent_kafka, psycopg' 2>/dev/null; then
  echo "deps: installing confluent-kafka and psycopg" >&2
  python3 -m pip install -q confluent-kafka 'psycopg[binary]' 2>/dev/null \
    || python3 -m pip install -q --break-system-packages confluent-kafka 'psycopg[binary]'
fi

node_example="$(dirname "$0")/../examples/node-postgres"
if [ ! -f "$node_example/node_modules/.package-lock.json" ] \
    || [ "$node_example/package-lock.json" -nt "$node_example/node_modules/.package-lock.json" ]; then
  echo "deps: npm ci in examples/node-postgres" >&2
  npm ci --no-audit --no-fund --prefix "$node_example" >/dev/null
fi
