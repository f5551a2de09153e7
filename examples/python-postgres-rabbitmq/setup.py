"""Creates the store's schema (``DATABASE_URL``) and declares the durable quorum queue ``orders``
(``AMQP_URL``). Runs once after the services are ready, and again after ``reset.py``; running it
again changes nothing.
"""

from common import BROKER_DOWN, SCHEMA, STORE_DOWN, broker_params, fail, pika, psycopg, setting
from common import QUEUE, QUEUE_ARGS


def main():
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=5) as conn:
            conn.execute(SCHEMA)
    except STORE_DOWN as error:
        fail(f"PostgreSQL did not answer: {error}", 4)
    try:
        connection = pika.BlockingConnection(broker_params())
        connection.channel().queue_declare(QUEUE, durable=True, arguments=QUEUE_ARGS)
        connection.close()
    except BROKER_DOWN as error:
        fail(f"RabbitMQ did not answer: {error!r}", 4)


if __name__ == "__main__":
    main()
