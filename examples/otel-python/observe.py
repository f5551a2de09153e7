"""Prints the ground truth read back from SQLite and Redis: one JSON object on one line.

Its keys are those of the trace's ``observed`` row: tasks, tasks_done, results, dedup_keys,
counter, outbox_pending, outbox_published, stream_messages.
"""

import json

from common import REDIS_DOWN, STREAM, broker, fail, store


def main():
    db = store()
    try:
        def count(sql):
            return db.execute(sql).fetchone()[0]

        observed = {
            "tasks": count("SELECT COUNT(*) FROM tasks"),
            "tasks_done": count("SELECT COUNT(*) FROM tasks WHERE done = 1"),
            "results": count("SELECT COUNT(*) FROM results"),
            "dedup_keys": count("SELECT COUNT(*) FROM processed"),
            "counter": count("SELECT value FROM counter"),
            "outbox_pending": count("SELECT COUNT(*) FROM outbox WHERE published = 0"),
            "outbox_published": count("SELECT COUNT(*) FROM outbox WHERE published = 1"),
        }
    finally:
        db.close()
    try:
        observed["stream_messages"] = broker().xlen(STREAM)
    except REDIS_DOWN as error:
        fail(f"Redis did not answer: {error}", 1)
    print(json.dumps(observed, sort_keys=True))


if __name__ == "__main__":
    main()
