"""The relay: publishes pending outbox rows to the Redis Stream in commit order, then marks them.

The publish span follows the OpenTelemetry messaging conventions (``messaging.operation.type``
``send``, ``messaging.message.id``) and has no ``outbox.kind``: its start reads as
``publish_attempt`` and its end as ``publish_acked``, or ``publish_unacked`` when its status is
ERROR (Redis did not answer: the copy may or may not be in the stream). The span ends right after
the publish ACK, before the mark. The mark is a span of its own, ``outbox.kind = outbox_marked``
with the commit's ``store_rev``, ending right after that commit.

With ``BUG=mark-first`` the relay marks a row published before it publishes it: a relay killed
between the two loses the event for good (the analyzer's ``no-lost-task``).

With ``BUG=mark-on-timeout`` the relay takes a publish that raised (no answer from Redis) as sent
and marks the row: when the request never reached Redis, the event is lost for good. No kill
shows it; a request lost on the wire does (``drop requests relay redis after publish_attempt``).

When Redis is down the relay waits and starts again from the oldest pending row, so the rows of
an aggregate go out in their order.
"""

import json

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (PUBLISH, REDIS_DOWN, SEQ, STREAM, begin, broker, bug, bump_rev, event_span,
                    kept, set_kept, stop_on_sigterm, store, tracer)


def publish(tracer_, script, row, attempt):
    """Publishes one copy of ``row``; returns its ``broker_seq``, or ``None`` without an ACK."""
    event_id, task_id, aggregate_id, aggregate_seq, amount = row
    message = json.dumps({"event_id": event_id, "task_id": task_id, "amount": amount})
    with tracer_.start_as_current_span(
        "orders publish",
        kind=SpanKind.PRODUCER,
        attributes=kept({
            "messaging.system": "redis",
            "messaging.destination.name": STREAM,
            "messaging.operation.type": "send",
            "messaging.message.id": event_id,
            "outbox.attempt": attempt,
            "outbox.task_id": task_id,
            "outbox.aggregate_id": aggregate_id,
            "outbox.aggregate_seq": aggregate_seq,
        }),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            broker_seq = script(keys=[STREAM, SEQ], args=[message])
        except REDIS_DOWN as error:
            span.set_status(Status(StatusCode.ERROR, f"no publish ACK: {error}"))
            return None
        set_kept(span, "outbox.broker_seq", broker_seq)
        return broker_seq


def mark(tracer_, db, event_id):
    """Marks the row published in its own transaction and reports it."""
    begin(db)
    db.execute("UPDATE outbox SET published = 1 WHERE event_id = ?", (event_id,))
    rev = bump_rev(db)
    db.execute("COMMIT")
    event_span(tracer_, "outbox mark", "outbox_marked", event_id=event_id, store_rev=rev)


def main():
    provider, tracer_ = tracer()
    db = store()
    script = broker().register_script(PUBLISH)
    stop = stop_on_sigterm()
    mark_first = bug() == "mark-first"
    mark_on_timeout = bug() == "mark-on-timeout"
    attempts = {}
    while not stop.is_set():
        pending = db.execute(
            "SELECT event_id, task_id, aggregate_id, aggregate_seq, amount FROM outbox"
            " WHERE published = 0 ORDER BY rowid LIMIT 16"
        ).fetchall()
        if not pending:
            stop.wait(0.02)
            continue
        for row in pending:
            if stop.is_set():
                break
            event_id = row[0]
            if mark_first:
                mark(tracer_, db, event_id)
            attempts[event_id] = attempts.get(event_id, 0) + 1
            if publish(tracer_, script, row, attempts[event_id]) is None:
                if mark_on_timeout:
                    mark(tracer_, db, event_id)
                    continue
                stop.wait(0.2)
                break
            if not mark_first:
                mark(tracer_, db, event_id)
    provider.shutdown()


if __name__ == "__main__":
    main()
