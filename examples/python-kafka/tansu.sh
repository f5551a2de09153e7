#!/bin/sh
# tansu, a Kafka-compatible broker, for the recorder (tansu 0.6: `cargo install tansu`, or
# scripts/deps.sh).
#
#   tansu.sh serve DIR PORT   one broker listening on 127.0.0.1:PORT, advertising that address,
#                             its topics, records, committed offsets and groups in the SQLite file
#                             DIR/tansu.db: a restart, even after a SIGKILL, finds every record it
#                             acknowledged.
#   tansu.sh ready PORT       exits 0 once the broker answers a Kafka metadata request on PORT
#                             (ready.py).
#
# TANSU names another binary (default: tansu on PATH, else ~/.cargo/bin/tansu).
set -eu

tansu=${TANSU:-$(command -v tansu || echo "$HOME/.cargo/bin/tansu")}

case "${1:-}" in
ready)
    exec python3 "$(dirname "$0")/ready.py" "$2"
    ;;
serve)
    dir=$(cd "$2" && pwd)
    port=$3
    ;;
*)
    echo "usage: tansu.sh serve DIR PORT | tansu.sh ready PORT" >&2
    exit 2
    ;;
esac

if [ ! -x "$tansu" ]; then
    echo "tansu.sh: no tansu broker (cargo install tansu, or scripts/deps.sh; TANSU names one)" >&2
    exit 4
fi
# Its own telemetry stays off: OTEL_EXPORTER_OTLP_ENDPOINT is the recorder's, for the processes.
unset OTEL_EXPORTER_OTLP_ENDPOINT
exec "$tansu" broker \
    --listener-url "tcp://127.0.0.1:$port" \
    --advertised-listener-url "tcp://127.0.0.1:$port" \
    --storage-engine "sqlite:///$dir/tansu.db"
