"""Prints the ground truth read back from PostgreSQL and Kafka: one JSON object on one line.

Its keys are those of the trace's ``observed`` row: tasks, tasks_done, results, dedup_keys,
counter (one counter per aggregate, by its key), outbox_pending, outbox_published, and
stream_messages: the records the topic holds (its high watermark less its low one), every copy
counted.
"""

import json

from common import BROKER_DOWN, STORE_DOWN, fail, psycopg, setting, watermarks


def main():
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM tasks WHERE done),"
                " (SELECT count(*) FROM results), (SELECT count(*) FROM processed),"
                " (SELECT count(*) FROM outbox WHERE NOT published),"
                " (SELECT count(*) FROM outbox WHERE published)").fetchone()
            counters = conn.execute("SELECT counter_key, value FROM counters").fetchall()
    except STORE_DOWN as error:
        fail(f"cannot read the store back: {error}", 1)
    try:
        low, high, _ = watermarks()
    except BROKER_DOWN as error:
        fail(f"cannot read the topic back: {error}", 1)
    names = ("tasks", "tasks_done", "results", "dedup_keys", "outbox_pending", "outbox_published")
    observed = dict(zip(names, row))
    observed["counter"] = {key: value for key, value in sorted(counters)}
    observed["stream_messages"] = high - low
    print(json.dumps(observed, sort_keys=True))


if __name__ == "__main__":
    main()
