"""The relay: publishes pending outbox rows to Redis in commit order, then marks them published.

The publish span follows the OpenTelemetry messaging conventions (``messaging.operation.type``
``send``, ``messaging.message.id``) and has no ``outbox.kind``: the analyzer reads its start as
``publish_attempt`` and its end as ``publish_acked`` (``publish_unacked`` if its status is ERROR).
The mark is a span of its own with ``outbox.kind = outbox_marked`` and the commit's ``store_rev``.
"""

import json

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (
    LOG,
    PUBLISH,
    QUEUE,
    SEQ,
    begin,
    broker,
    bump_rev,
    event_span,
    role_arguments,
    stop_on_sigterm,
    store,
    tracer,
)


def main():
    args = role_arguments(__doc__).parse_args()
    provider, tracer_ = tracer("relay", args.incarnation, args.spans, args.run_id, args.scenario)
    db = store(args.db)
    publish = broker(args.redis_port).register_script(PUBLISH)
    stop = stop_on_sigterm()
    while not stop.is_set():
        pending = db.execute(
            "SELECT event_id, task_id, aggregate_id, aggregate_seq, amount FROM outbox"
            " WHERE published = 0 ORDER BY rowid LIMIT 16"
        ).fetchall()
        if not pending:
            stop.wait(0.02)
            continue
        for event_id, task_id, aggregate_id, aggregate_seq, amount in pending:
            message = json.dumps({"event_id": event_id, "task_id": task_id, "amount": amount})
            with tracer_.start_as_current_span(
                "outbox publish",
                kind=SpanKind.PRODUCER,
                attributes={
                    "messaging.system": "redis",
                    "messaging.operation.type": "send",
                    "messaging.message.id": event_id,
                    "outbox.attempt": 1,
                    "outbox.task_id": task_id,
                    "outbox.aggregate_id": aggregate_id,
                    "outbox.aggregate_seq": aggregate_seq,
                },
            ) as span:
                try:
                    broker_seq = publish(keys=[QUEUE, LOG, SEQ], args=[message])
                except Exception as error:  # no ACK: the copy may or may not be queued
                    span.set_status(Status(StatusCode.ERROR, str(error)))
                    raise
                span.set_attribute("outbox.broker_seq", broker_seq)
            begin(db)
            db.execute("UPDATE outbox SET published = 1 WHERE event_id = ?", (event_id,))
            rev = bump_rev(db)
            db.execute("COMMIT")
            event_span(tracer_, "outbox mark", "outbox_marked", event_id=event_id, store_rev=rev)
    provider.shutdown()


if __name__ == "__main__":
    main()
