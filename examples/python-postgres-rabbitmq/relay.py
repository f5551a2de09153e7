"""The relay: publishes pending outbox rows to RabbitMQ in commit order, each with a publisher
confirm, and marks each row published after its confirm.

The publish span follows the OpenTelemetry messaging conventions (``messaging.operation.type``
``send``, ``messaging.message.id`` = the AMQP ``message_id`` = the event id) and has no
``outbox.kind``: its start reads as ``publish_attempt``, its end as ``publish_acked``, or
``publish_unacked`` when its status is ERROR (no confirm: the connection broke or the broker
nacked; the message may or may not be in the queue). It ends right after the confirm, before the
mark. The mark is a span of its own, ``outbox.kind = outbox_marked`` with the commit's
``store_rev``. RabbitMQ gives a publish no position: ``outbox.broker_seq`` stays off.

When RabbitMQ or PostgreSQL is down the relay connects again and starts over from the oldest
pending row, so the rows of an aggregate go out in their order.

``BUG=mark-before-confirm``: the relay marks the row as soon as it starts the publish, before the
broker's confirm; a relay killed between the two leaves a row marked and never published.
"""

import json

import pika
from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (BROKER_DOWN, QUEUE, STORE_DOWN, Store, Uncertain, broker, bug, event_span,
                    next_rev, stop_on_sigterm, tracer)


class Relay:
    """One relay life: its store, its channel (in confirm mode), its tracer."""

    def __init__(self):
        self.bug = bug()
        self.provider, self.tracer = tracer("orders-relay")
        self.stop = stop_on_sigterm()
        self.store = Store()
        self.connection = self.channel = None
        self.attempts = {}

    def channel_(self):
        """The open channel, or a new one in confirm mode."""
        if self.channel is None or not self.channel.is_open:
            self.close()
            self.connection, self.channel = broker(self.stop)
            self.channel.confirm_delivery()
        return self.channel

    def close(self):
        """Closes a connection that may be broken."""
        try:
            if self.connection is not None and self.connection.is_open:
                self.connection.close()
        except BROKER_DOWN:
            pass
        self.connection = self.channel = None

    def publish(self, row):
        """Publishes one copy of ``row``; returns whether the broker confirmed it."""
        event_id, task_id, aggregate_id, aggregate_seq, amount = row
        attempt = self.attempts[event_id] = self.attempts.get(event_id, 0) + 1
        body = json.dumps({"event_id": event_id, "task_id": task_id,
                           "aggregate_id": aggregate_id, "amount": amount}).encode()
        with self.tracer.start_as_current_span(
            "orders publish", kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": "rabbitmq",
                "messaging.destination.name": QUEUE,
                "messaging.operation.type": "send",
                "messaging.message.id": event_id,
                "outbox.attempt": attempt,
                "outbox.task_id": task_id,
                "outbox.aggregate_id": aggregate_id,
                "outbox.aggregate_seq": aggregate_seq,
            },
            record_exception=False, set_status_on_exception=False,
        ) as span:
            if self.bug == "mark-before-confirm":
                try:
                    self.mark(event_id)
                except BaseException:
                    span.set_status(Status(StatusCode.ERROR, "not published"))
                    raise
            properties = pika.BasicProperties(message_id=event_id, delivery_mode=2,
                                              content_type="application/json")
            try:
                self.channel_().basic_publish("", QUEUE, body, properties, mandatory=True)
            except BROKER_DOWN as error:
                span.set_status(Status(StatusCode.ERROR, f"no publish confirm: {error!r}"))
                self.close()
                return False
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
        """Publishes and marks the pending rows in commit order; returns whether there were any."""
        with self.store.connect(self.stop).cursor() as cur:
            cur.execute("SELECT event_id, task_id, aggregate_id, aggregate_seq, amount FROM outbox"
                        " WHERE NOT published ORDER BY id LIMIT 16")
            rows = cur.fetchall()
        self.store.conn.commit()
        for row in rows:
            if self.stop.is_set():
                break
            if not self.publish(row):
                self.stop.wait(0.2)
                break
            if self.bug != "mark-before-confirm":
                self.mark(row[0])
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
        self.close()
        self.provider.shutdown()


if __name__ == "__main__":
    Relay().run()
