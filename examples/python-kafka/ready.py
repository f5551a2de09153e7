"""Exits 0 once a Kafka broker answers a metadata request on 127.0.0.1:PORT, 1 otherwise.

Used as the service's ready check (``tansu.sh ready PORT``): one admin client, one request.
"""

import sys

try:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
except ImportError as missing:
    print(f"ready.py: missing Python package ({missing}): pip install confluent-kafka",
          file=sys.stderr)
    sys.exit(3)


def main():
    port = int(sys.argv[1])
    client = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}",
                          "broker.address.family": "v4", "log_level": 0})
    try:
        client.list_topics(timeout=1)
    except KafkaException as error:
        print(f"not ready: {error}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
