"""Returns the stores to their state right after ``setup.py``: empties every table, restarts the
``store_rev`` sequence, and purges the queue, and forgets what ``quiet.py`` saw. ``setup.py`` runs after it.
"""

import os

from common import BROKER_DOWN, QUEUE, STORE_DOWN, broker_params, fail, pika, psycopg, setting


def main():
    try:
        os.remove(setting("QUIET_STATE", "quiet.state"))
    except FileNotFoundError:
        pass
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=5) as conn:
            conn.execute("TRUNCATE tasks, outbox, processed, results, counters RESTART IDENTITY")
            conn.execute("ALTER SEQUENCE store_rev RESTART")
    except psycopg.errors.UndefinedTable:
        pass
    except STORE_DOWN as error:
        fail(f"PostgreSQL did not answer: {error}", 4)
    try:
        connection = pika.BlockingConnection(broker_params())
        channel = connection.channel()
        try:
            channel.queue_purge(QUEUE)
        except pika.exceptions.ChannelClosedByBroker as error:
            if error.reply_code != 404:
                raise
        connection.close()
    except BROKER_DOWN as error:
        fail(f"RabbitMQ did not answer: {error!r}", 4)


if __name__ == "__main__":
    main()
