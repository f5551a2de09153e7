"""Exits 0 once a RabbitMQ node answers an AMQP handshake on 127.0.0.1:PORT, 1 otherwise.

Used as the service's ready check (``rabbit.sh ready PORT``): one connection, opened and closed.
"""

import sys

try:
    import pika
except ImportError as missing:
    print(f"ready.py: missing Python package ({missing}): pip install pika", file=sys.stderr)
    sys.exit(3)


def main():
    port = int(sys.argv[1])
    params = pika.ConnectionParameters("127.0.0.1", port, connection_attempts=1,
                                       socket_timeout=1, blocked_connection_timeout=1)
    try:
        pika.BlockingConnection(params).close()
    except pika.exceptions.AMQPError as error:
        print(f"not ready: {error!r}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
