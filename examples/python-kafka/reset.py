"""Returns the stores to their state right after ``setup.py``: empties every table, restarts the
``store_rev`` sequence, deletes the workers' group and the topic, with its records and the
offsets committed on it (tansu's SQLite storage has no DeleteRecords). ``setup.py`` runs after it
and creates the topic again, its offsets from 0.
"""

from common import (BROKER_DOWN, GROUP, STORE_DOWN, TOPIC, KafkaError, admin, confluent_kafka,
                    fail, psycopg, setting)


def empty_topic():
    """Deletes the workers' group and the topic."""
    client = admin()
    try:
        client.delete_consumer_groups([GROUP], request_timeout=5)[GROUP].result(timeout=10)
    except confluent_kafka.KafkaException as error:
        if error.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
            raise
    if TOPIC in client.list_topics(timeout=5).topics:
        client.delete_topics([TOPIC], operation_timeout=5)[TOPIC].result(timeout=10)


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
