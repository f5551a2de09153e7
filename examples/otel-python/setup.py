"""Creates the store's schema (``INV_DB``) and the broker's stream and consumer group (``REDIS_URL``).

Runs once before the services start; running it again changes nothing.
"""

from common import GROUP, REDIS_DOWN, SCHEMA, STREAM, broker, fail, redis, store


def main():
    db = store()
    db.executescript(SCHEMA)
    db.close()
    client = broker()
    try:
        client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except redis.exceptions.ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise
    except REDIS_DOWN as error:
        fail(f"Redis did not answer: {error}", 4)


if __name__ == "__main__":
    main()
