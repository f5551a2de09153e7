"""Exits 0 when nothing is left to move, 1 otherwise (and says what is left, on one line).

Nothing left: no outbox row waits for its publish, every stream entry was handed to a consumer
and every handed-out entry was ACKed. Tasks that are not done are not asked about: when nothing
moves they never will be (a lost task is the analyzer's ``no-lost-task`` to judge, on a recovered
run, not a wait until the deadline).
"""

import sys

from common import GROUP, REDIS_DOWN, STREAM, broker, store


def left():
    """What is still moving, as ``name=count`` strings (empty when quiet)."""
    db = store()
    try:
        (pending,) = db.execute("SELECT COUNT(*) FROM outbox WHERE published = 0").fetchone()
    finally:
        db.close()
    client = broker()
    try:
        last = client.xinfo_stream(STREAM)["last-generated-id"]
        group = next(g for g in client.xinfo_groups(STREAM) if g["name"] == GROUP)
        unacked = client.xpending(STREAM, GROUP)["pending"]
    except REDIS_DOWN:
        return ["redis=down"]
    undelivered = int(group["last-delivered-id"] != last)
    counts = {"outbox_pending": pending,
              "undelivered": undelivered, "unacked": unacked}
    return [f"{name}={count}" for name, count in counts.items() if count]


def main():
    still = left()
    if still:
        print("moving: " + " ".join(still))
        sys.exit(1)


if __name__ == "__main__":
    main()
