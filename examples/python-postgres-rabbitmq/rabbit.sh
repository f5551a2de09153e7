#!/bin/sh
# RabbitMQ for the recorder, from Debian's package (rabbitmq-server, 3.10 or later).
#
#   rabbit.sh serve DIR PORT   a RabbitMQ node whose AMQP listener is 127.0.0.1:PORT, its data
#                              (mnesia, quorum queues' logs), logs, cookie and enabled-plugins file
#                              in DIR. Its node name is made once per DIR (rabbit-PORT-RANDOM@localhost:
#                              several nodes run at once) and kept there, so a restart finds its
#                              queues and their unACKed messages again. The Erlang distribution
#                              port is RabbitMQ's own choice (the AMQP port + 20000).
#   rabbit.sh ready PORT       exits 0 once the node accepts an AMQP connection on PORT
#                              (ready.py: no Erlang CLI, no cookie, no epmd look-up).
#
# The nodes of a machine share one epmd on 4369. It is started here, detached and without the
# recorder's marks in its environment: no scenario owns it, so the end of one scenario leaves it
# to the nodes of the others, and the recorder stops it with the last scenario or at the run's
# end. (A node whose epmd went away anyway keeps serving AMQP; only the Erlang CLI tools lose
# sight of it, and none is used.)
set -eu

home=${RABBITMQ_SCRIPTS:-/usr/lib/rabbitmq/bin}
if [ ! -x "$home/rabbitmq-server" ]; then
    echo "rabbit.sh: no RabbitMQ server in $home (apt-get install rabbitmq-server, or scripts/rabbitmq.sh)" >&2
    exit 4
fi

case "${1:-}" in
ready)
    exec python3 "$(dirname "$0")/ready.py" "$2"
    ;;
serve)
    dir=$(cd "$2" && pwd)
    port=$3
    ;;
*)
    echo "usage: rabbit.sh serve DIR PORT | rabbit.sh ready PORT" >&2
    exit 2
    ;;
esac

if [ ! -s "$dir/nodename" ]; then
    echo "rabbit-$port-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')@localhost" >"$dir/nodename"
fi
node=$(cat "$dir/nodename")

if ! epmd -names >/dev/null 2>&1; then
    env -u OUTBOX_RECORDER_SCENARIO -u OUTBOX_RECORDER_OUT epmd -daemon || true
fi

[ -f "$dir/enabled_plugins" ] || echo "[]." >"$dir/enabled_plugins"
mkdir -p "$dir/mnesia" "$dir/log"
export HOME="$dir" \
    RABBITMQ_NODENAME="$node" \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="$port" \
    RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_CONF_ENV_FILE=/dev/null \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
    RABBITMQ_PID_FILE="$dir/rabbit.pid"
# Logs to files in DIR only; a small machine: no disk or memory alarm from other nodes' usage.
cat >"$dir/rabbitmq.conf" <<CONF
log.console = false
log.file.level = info
disk_free_limit.absolute = 50MB
vm_memory_high_watermark.relative = 0.8
CONF
exec "$home/rabbitmq-server"
