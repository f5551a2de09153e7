"""Exits 0 when nothing is left to move, 1 otherwise (and says what is left, on one line).

Nothing left: no outbox row waits for its publish, no message is ready in the queue (the
queue's own count, from a passive declare), and no message is held by a worker: every published
event has its dedup key, or nothing has changed for ``QUIET_STILL_MS`` (default 3000).

RabbitMQ gives an AMQP client no count of the messages its consumers hold unACKed (the CLI's and
the management plugin's counts are statistics, refreshed every few seconds), so a message held by
a worker shows as a published event with no dedup key. A worker handles one in ``WORK_MS``; one
that stays so is lost (a relay that marked a row it never published, a worker that ACKed before
its commit and died): no-lost-task is the analyzer's to judge, after this says quiet. The last
answer is kept in ``QUIET_STATE`` (default ``quiet.state``, in the working directory).
"""

import json
import os
import sys
import time

from common import BROKER_DOWN, QUEUE, STORE_DOWN, broker_params, number, pika, psycopg, setting


def left():
    """What is still moving, as ``name=count`` strings, and what may be held by a worker."""
    try:
        with psycopg.connect(setting("DATABASE_URL"), connect_timeout=2) as conn:
            pending, unprocessed = conn.execute(
                "SELECT (SELECT count(*) FROM outbox WHERE NOT published),"
                " (SELECT count(*) FROM outbox o WHERE published AND NOT EXISTS"
                "  (SELECT 1 FROM processed p WHERE p.event_id = o.event_id))").fetchone()
    except STORE_DOWN:
        return ["postgres=down"], 0
    try:
        connection = pika.BlockingConnection(broker_params())
        ready = connection.channel().queue_declare(QUEUE, passive=True).method.message_count
        connection.close()
    except BROKER_DOWN:
        return ["rabbitmq=down"], 0
    counts = {"outbox_pending": pending, "ready": ready}
    return [f"{name}={count}" for name, count in counts.items() if count], unprocessed


def main():
    still, unprocessed = left()
    if not still and unprocessed:
        path = setting("QUIET_STATE", "quiet.state")
        now = time.monotonic()
        try:
            with open(path, encoding="utf-8") as f:
                seen = json.load(f)
        except (OSError, ValueError):
            seen = {}
        # A count last seen long ago (a file left by another scenario) is not a count that stayed.
        if (seen.get("unprocessed") != unprocessed or seen.get("boot") != boot_id()
                or now - seen.get("checked", 0) > 30):
            seen = {"unprocessed": unprocessed, "since": now, "boot": boot_id()}
        seen["checked"] = now
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(seen, f)
        os.replace(path + ".tmp", path)
        if (now - seen["since"]) * 1000 < number("QUIET_STILL_MS", 3000):
            still = [f"unprocessed={unprocessed}"]
    if still:
        print("moving: " + " ".join(still))
        sys.exit(1)


def boot_id():
    """This machine's boot (``time.monotonic`` counts from it)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


if __name__ == "__main__":
    main()
