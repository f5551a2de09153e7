"""Exits 0 when nothing is left to move, 1 otherwise (and says what is left, on one line).

Nothing left: no outbox row waits for its produce, and the workers' group has committed the
offset after the topic's last record (no lag). Kafka keeps both counts, so no waiting is
needed: a record whose offset was committed but whose effect never came (a worker that
committed its offset first and died), or a row marked but never produced, is quiet, and
lost: no-lost-task is the analyzer's to judge.
"""

import sys

from common import BROKER_DOWN, STORE_DOWN, psycopg, setting, watermarks


def left():
    """What is still moving, as ``name=count`` strings."""
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=2) as conn:
            (pending,) = conn.execute(
                "SELECT count(*) FROM outbox WHERE NOT published").fetchone()
    except STORE_DOWN:
        return ["postgres=down"]
    try:
        low, high, committed = watermarks(timeout=2.0)
    except BROKER_DOWN:
        return ["kafka=down"]
    counts = {"outbox_pending": pending, "lag": high - max(low, committed or 0)}
    return [f"{name}={count}" for name, count in counts.items() if count]


def main():
    still = left()
    if still:
        print("moving: " + " ".join(still))
        sys.exit(1)


if __name__ == "__main__":
    main()
