"""The relay: produces pending outbox rows to Kafka in commit order, each with ``acks=all``, waits
for each record's delivery report, and marks the row published after it.

The produce span follows the OpenTelemetry messaging conventions (``messaging.operation.type``
``send``, ``messaging.message.id`` = the event id, also sent as the record's ``event_id`` header;
the record's key is the aggregate id) and has no ``outbox.kind``: its start reads as
``publish_attempt``, its end as ``publish_acked``, or ``publish_unacked`` when its status is ERROR
(no delivery report within ``PRODUCE_TIMEOUT_MS``, or an error one: the record may or may not be
in the topic). A delivered record's partition and offset go on the span
(``messaging.kafka.offset`` and ``outbox.broker_seq``: the offset; ``outbox.partition``). It ends
right after the report, before the mark. The mark is a span of its own, ``outbox.kind =
outbox_marked`` with the commit's ``store_rev``.

librdkafka retries a produce whose acknowledgement did not come (``request.timeout.ms``) on its
own, within ``message.timeout.ms``; the producer is not idempotent, so a retry after a lost
acknowledgement writes a second copy of the record, which the workers' dedup key suppresses.

When Kafka or PostgreSQL is down the relay waits and starts over from the oldest pending row, so
the rows of an aggregate go out in their order.

``BUG=mark-on-error``: the relay marks the row even when its produce failed or timed out; a record
that never reached the topic leaves a row marked and never published.
"""

import json
import time

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (STORE_DOWN, TOPIC, KafkaException, Store, Uncertain, bug, confluent_kafka,
                    event_span, kafka_config, next_rev, number, position, stop_on_sigterm, tracer)


def producer(timeout_ms):
    """A producer that waits for every in-sync replica (``acks=all``), one request in flight,
    a record given up after ``timeout_ms``."""
    return confluent_kafka.Producer(kafka_config(**{
        "acks": "all",
        "enable.idempotence": False,
        "max.in.flight.requests.per.connection": 1,
        "linger.ms": 0,
        "message.timeout.ms": timeout_ms,
        "request.timeout.ms": max(1000, min(2000, timeout_ms // 2)),
        "retry.backoff.ms": 100,
    }))


class Relay:
    """One relay life: its store, its producer, its tracer."""

    def __init__(self):
        self.bug = bug()
        self.timeout_ms = number("PRODUCE_TIMEOUT_MS", 5000)
        self.provider, self.tracer = tracer("orders-relay")
        self.stop = stop_on_sigterm()
        self.store = Store()
        self.producer = producer(self.timeout_ms)
        self.attempts = {}

    def deliver(self, event_id, key, body):
        """Produces one record and waits for its delivery report: ``(error, message)``, the
        error ``None`` when the broker acknowledged it."""
        report = {}

        def on_delivery(error, message):
            report["error"], report["message"] = error, message

        try:
            self.producer.produce(TOPIC, value=body, key=key, headers=[("event_id", event_id)],
                                  on_delivery=on_delivery)
        except (KafkaException, BufferError) as error:
            return error, None
        # librdkafka reports every record within message.timeout.ms; the margin covers a slow poll.
        until = time.monotonic() + self.timeout_ms / 1000 + 5
        while "error" not in report and time.monotonic() < until:
            self.producer.poll(0.05)
        if "error" not in report:
            return "no delivery report", None
        return report["error"], report["message"]

    def publish(self, row):
        """Produces one copy of ``row``; returns whether the broker acknowledged it."""
        event_id, task_id, aggregate_id, aggregate_seq, amount = row
        attempt = self.attempts[event_id] = self.attempts.get(event_id, 0) + 1
        body = json.dumps({"event_id": event_id, "task_id": task_id,
                           "aggregate_id": aggregate_id, "amount": amount}).encode()
        with self.tracer.start_as_current_span(
            "orders publish", kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": "kafka",
                "messaging.destination.name": TOPIC,
                "messaging.operation.type": "send",
                "messaging.message.id": event_id,
                "messaging.kafka.message.key": aggregate_id,
                "outbox.attempt": attempt,
                "outbox.task_id": task_id,
                "outbox.aggregate_id": aggregate_id,
                "outbox.aggregate_seq": aggregate_seq,
            },
            record_exception=False, set_status_on_exception=False,
        ) as span:
            error, message = self.deliver(event_id, aggregate_id.encode(), body)
            if error is not None:
                span.set_status(Status(StatusCode.ERROR, f"no produce acknowledgement: {error}"))
                return False
            span.set_attributes(position(message))
        return True

    def mark(self, event_id):
        """Marks the row published in its own transaction and reports it."""
        def body(cur, attempt):
            cur.execute("UPDATE outbox SET published = true WHERE event_id = %s", (event_id,))
            attempt["rev"] = next_rev(cur)
            return attempt["rev"]
        rev = self.store.transaction(body)
        event_span(self.tracer, "outbox mark", "outbox_marked", event_id=event_id, store_rev=rev)

    def pass_(self):
        """Produces and marks the pending rows in commit order; returns whether there were any."""
        with self.store.connect(self.stop).cursor() as cur:
            cur.execute("SELECT event_id, task_id, aggregate_id, aggregate_seq, amount FROM outbox"
                        " WHERE NOT published ORDER BY id LIMIT 16")
            rows = cur.fetchall()
        self.store.conn.commit()
        for row in rows:
            if self.stop.is_set():
                break
            acknowledged = self.publish(row)
            if acknowledged or self.bug == "mark-on-error":
                self.mark(row[0])
            if not acknowledged:
                self.stop.wait(0.2)
                break
        return bool(rows)

    def run(self):
        """Passes until SIGTERM."""
        while not self.stop.is_set():
            try:
                if not self.pass_():
                    self.stop.wait(0.02)
            except (Uncertain, *STORE_DOWN):
                self.store.drop()
                self.stop.wait(0.2)
        self.producer.flush(1)
        self.provider.shutdown()


if __name__ == "__main__":
    Relay().run()
