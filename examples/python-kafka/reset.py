"""Returns the stores to their state right after ``setup.py``: empties every table, restarts the
``store_rev`` sequence, deletes the topic's records (the topic stays: its offsets go on from where
they were) and the workers' group with its committed offsets. ``setup.py`` runs after it.
"""

from common import (BROKER_DOWN, GROUP, STORE_DOWN, TOPIC, KafkaError, admin, confluent_kafka,
                    fail, psycopg, setting, watermarks)


def empty_topic():
    """Deletes every record of the topic (up to its high watermark) and the workers' group."""
    client = admin()
    if TOPIC not in client.list_topics(timeout=5).topics:
        return
    low, high, _ = watermarks()
    if high > low:
        end = confluent_kafka.TopicPartition(TOPIC, 0, high)
        client.delete_records([end], operation_timeout=5)[end].result(timeout=10)
    try:
        client.delete_consumer_groups([GROUP], request_timeout=5)[GROUP].result(timeout=10)
    except confluent_kafka.KafkaException as error:
        if error.args[0].code() not in (KafkaError.GROUP_ID_NOT_FOUND,):
            raise


def main():
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=5) as conn:
            conn.execute("TRUNCATE tasks, outbox, processed, results, counters RESTART IDENTITY")
            conn.execute("ALTER SEQUENCE store_rev RESTART")
    except psycopg.errors.UndefinedTable:
        pass
    except STORE_DOWN as error:
        fail(f"PostgreSQL did not answer: {error}", 4)
    try:
        empty_topic()
    except BROKER_DOWN as error:
        fail(f"Kafka did not answer: {error}", 4)


if __name__ == "__main__":
    main()
