"""The worker: takes a copy from Redis, commits its effect in SQLite, then ACKs it.

One transaction holds the dedup key (``processed``), the result, the completed task and the
counter. A copy whose key is already there is suppressed (no effect) and ACKed. Spans:

- ``outbox receive`` (``messaging.operation.type = receive``, ``outbox.attempt`` = the delivery
  count): ``delivered``, or ``redelivered`` when the count is above 1;
- ``outbox commit``: ``effect_committed`` with ``store_rev``, ``amount`` and ``counter``, or
  ``duplicate_suppressed``;
- ``outbox ack`` (``messaging.operation.type = settle``): ``acked``.

``--crash-after N``: after the N-th commit, before its ACK, print ``crash-point`` and wait for the
supervisor's SIGKILL. ``--bug``: no dedup check, so a redelivered copy is applied again.
"""

import json
import sys
import time

from opentelemetry.trace import SpanKind

from common import (
    DELIVERIES,
    FETCH,
    PROCESSING,
    QUEUE,
    RECOVER,
    begin,
    broker,
    bump_rev,
    event_span,
    role_arguments,
    stop_on_sigterm,
    store,
    tracer,
)

#: The crash point's name, in the supervisor's ``crash`` span.
CRASH_POINT = "after-commit-before-ack"


def commit(db, event_id, task_id, amount, bug):
    """The effect's transaction; returns ``(store_rev, counter)``, or ``None`` for a duplicate."""
    begin(db)
    try:
        if not bug and db.execute(
            "SELECT 1 FROM processed WHERE event_id = ?", (event_id,)
        ).fetchone():
            db.execute("ROLLBACK")
            return None
        db.execute("INSERT OR IGNORE INTO processed (event_id) VALUES (?)", (event_id,))
        db.execute(
            "INSERT INTO results (event_id, task_id, amount) VALUES (?, ?, ?)",
            (event_id, task_id, amount),
        )
        db.execute("UPDATE tasks SET done = 1 WHERE task_id = ?", (task_id,))
        db.execute("UPDATE counter SET value = value + ?", (amount,))
        (counter,) = db.execute("SELECT value FROM counter").fetchone()
        rev = bump_rev(db)
        db.execute("COMMIT")
        return rev, counter
    except BaseException:
        db.execute("ROLLBACK")
        raise


def main():
    parser = role_arguments(__doc__)
    parser.add_argument("--crash-after", type=int, default=0)
    parser.add_argument("--bug", action="store_true")
    args = parser.parse_args()
    provider, tracer_ = tracer("worker", args.incarnation, args.spans, args.run_id, args.scenario)
    db = store(args.db)
    client = broker(args.redis_port)
    fetch = client.register_script(FETCH)
    client.register_script(RECOVER)(keys=[PROCESSING, QUEUE])
    stop = stop_on_sigterm()
    commits = 0
    while not stop.is_set():
        got = fetch(keys=[QUEUE, PROCESSING, DELIVERIES])
        if not got:
            stop.wait(0.02)
            continue
        item, deliveries = got
        broker_seq, message = item.split("|", 1)
        message = json.loads(message)
        with tracer_.start_as_current_span(
            "outbox receive",
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": "redis",
                "messaging.operation.type": "receive",
                "messaging.message.id": message["event_id"],
                "outbox.task_id": message["task_id"],
                "outbox.attempt": deliveries,
                "outbox.broker_seq": int(broker_seq),
            },
        ):
            pass
        event_id, task_id, amount = message["event_id"], message["task_id"], message["amount"]
        done = commit(db, event_id, task_id, amount, args.bug)
        if done is None:
            event_span(tracer_, "outbox commit", "duplicate_suppressed", event_id=event_id,
                       task_id=task_id)
        else:
            rev, counter = done
            event_span(tracer_, "outbox commit", "effect_committed", event_id=event_id,
                       task_id=task_id, amount=amount, counter=counter, store_rev=rev)
            commits += 1
            if commits == args.crash_after:
                print(f"crash-point {CRASH_POINT} {event_id}", flush=True)
                while True:  # the supervisor kills this process now
                    time.sleep(1)
        with tracer_.start_as_current_span(
            "outbox ack",
            attributes={
                "messaging.system": "redis",
                "messaging.operation.type": "settle",
                "messaging.message.id": event_id,
                "outbox.broker_seq": int(broker_seq),
            },
        ):
            client.lrem(PROCESSING, 1, item)
    provider.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
