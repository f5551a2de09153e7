"""Creates the store's schema (``DATABASE_URL``) and the topic ``orders``, of one partition
(``KAFKA_BOOTSTRAP``). Runs once after the services are ready, and again after ``reset.py``;
running it again changes nothing.
"""

from common import (BROKER_DOWN, SCHEMA, STORE_DOWN, TOPIC, KafkaError, admin, confluent_kafka,
                    fail, psycopg, setting)


def create_topic():
    """The topic, created unless it is there: one partition, one replica (one broker)."""
    client = admin()
    if TOPIC in client.list_topics(timeout=5).topics:
        return
    new = confluent_kafka.admin.NewTopic(TOPIC, num_partitions=1, replication_factor=1)
    try:
        client.create_topics([new], operation_timeout=5)[TOPIC].result(timeout=10)
    except confluent_kafka.KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def main():
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=5) as conn:
            conn.execute(SCHEMA)
    except STORE_DOWN as error:
        fail(f"PostgreSQL did not answer: {error}", 4)
    try:
        create_topic()
    except BROKER_DOWN as error:
        fail(f"Kafka did not answer: {error}", 4)


if __name__ == "__main__":
    main()
