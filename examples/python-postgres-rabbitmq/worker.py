"""The worker: takes an order from RabbitMQ, does its work, commits the effect in PostgreSQL,
then ACKs it.

One transaction holds the dedup key (``processed``, a primary key), the result, the completed task
and the aggregate's counter (``counters``, one row per aggregate: ``counter_key`` is the aggregate
id). It inserts the key first (``ON CONFLICT DO NOTHING``); a copy whose key is already there is
suppressed (no effect) and ACKed. Spans, each ending (and exported) right after its step:

- ``orders receive`` (``messaging.operation.type = receive``, ``messaging.message.id`` = the
  AMQP ``message_id``, ``messaging.rabbitmq.message.redelivered`` = RabbitMQ's flag,
  ``outbox.attempt`` = the quorum queue's ``x-delivery-count`` + 1): read as ``delivered``, or
  ``redelivered``;
- ``outbox commit``: ``effect_committed`` with ``store_rev``, ``amount``, ``counter`` and
  ``counter_key``, or ``duplicate_suppressed``;
- ``orders ack`` (``messaging.operation.type = settle``): read as ``acked``; ERROR when the ACK
  could not be sent (the connection broke: the message goes back to the queue).

The work between receive and commit takes ``WORK_MS`` milliseconds (default 100). While
PostgreSQL is down the worker keeps the message and tries the commit again; a commit whose reply
was lost is found by its key, written by this life with the number it took, and reported then.

``BUG=no-dedup``: the key is not looked at: a redelivered copy is applied again.
``BUG=ack-before-commit``: the ACK is sent before the commit; a worker killed between the two
loses the order.
"""

import json

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (BROKER_DOWN, LIFE, QUEUE, STORE_DOWN, Store, Uncertain, broker, bug,
                    event_span, next_rev, number, stop_on_sigterm, tracer)


def commit(store, order, check, uncertain):
    """The effect's transaction: ``(store_rev, counter)``, or ``None`` for a duplicate.

    ``check``: a key already there means a duplicate (the correct worker), unless it is this
    life's own commit whose reply was lost (``uncertain`` holds its number): that one is reported.
    """
    event_id, task_id = order["event_id"], order["task_id"]
    key, amount = order["aggregate_id"], order["amount"]

    def body(cur, attempt):
        cur.execute("INSERT INTO processed (event_id, store_rev, counter, committed_by)"
                    " VALUES (%s, 0, 0, %s) ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
                    (event_id, LIFE))
        fresh = cur.fetchone() is not None
        if check and not fresh:
            cur.execute("SELECT store_rev, counter, committed_by FROM processed"
                        " WHERE event_id = %s", (event_id,))
            rev, counter, by = cur.fetchone()
            if by == LIFE and uncertain.get(event_id) == rev:
                return rev, counter
            return None
        cur.execute("INSERT INTO counters (counter_key, value) VALUES (%s, %s)"
                    " ON CONFLICT (counter_key) DO UPDATE SET value = counters.value"
                    " + EXCLUDED.value RETURNING value", (key, amount))
        (counter,) = cur.fetchone()
        rev = attempt["rev"] = next_rev(cur)
        cur.execute("INSERT INTO results (event_id, task_id, amount) VALUES (%s, %s, %s)",
                    (event_id, task_id, amount))
        cur.execute("UPDATE tasks SET done = true WHERE task_id = %s", (task_id,))
        if fresh:
            cur.execute("UPDATE processed SET store_rev = %s, counter = %s WHERE event_id = %s",
                        (rev, counter, event_id))
        return rev, counter

    return store.transaction(body)


class Worker:
    """One worker life: its store, its channel, its tracer."""

    def __init__(self):
        self.bug = bug()
        self.work_ms = number("WORK_MS", 100)
        self.provider, self.tracer = tracer("orders-worker")
        self.stop = stop_on_sigterm()
        self.store = Store()
        self.connection = self.channel = None
        self.uncertain = {}

    def run(self):
        """Takes and handles messages until SIGTERM; connects again after the broker is lost."""
        while not self.stop.is_set():
            try:
                self.connection, self.channel = broker(self.stop)
                self.channel.basic_qos(prefetch_count=1)
                for method, properties, body in self.channel.consume(QUEUE,
                                                                     inactivity_timeout=0.05):
                    if self.stop.is_set():
                        break
                    if method is not None:
                        self.handle(method, properties, body)
            # pika raises ValueError ("Timeout closed before call") when its connection closes
            # under a consume or an ACK: the broker is gone as surely as with a socket error.
            except (*BROKER_DOWN, ValueError):
                self.stop.wait(0.2)
        try:
            self.connection.close()
        except (BROKER_DOWN, AttributeError):
            pass
        self.provider.shutdown()

    def handle(self, method, properties, body):
        """Receive, work, commit (or suppress), ACK: one delivery of one copy."""
        order = json.loads(body)
        event_id = order["event_id"]
        count = (properties.headers or {}).get("x-delivery-count")
        with self.tracer.start_as_current_span("orders receive", kind=SpanKind.CONSUMER, attributes={
            "messaging.system": "rabbitmq",
            "messaging.destination.name": QUEUE,
            "messaging.operation.type": "receive",
            "messaging.message.id": properties.message_id or event_id,
            "messaging.rabbitmq.message.redelivered": bool(method.redelivered),
            "outbox.task_id": order["task_id"],
            **({"outbox.attempt": int(count) + 1} if count is not None else {}),
        }):
            pass
        if self.bug == "ack-before-commit":
            self.ack(method.delivery_tag, event_id)
        self.connection.sleep(self.work_ms / 1000)
        done = self.retrying(order)
        self.uncertain.pop(event_id, None)
        if done is None:
            event_span(self.tracer, "outbox commit", "duplicate_suppressed", event_id=event_id,
                       task_id=order["task_id"])
        else:
            rev, counter = done
            event_span(self.tracer, "outbox commit", "effect_committed", event_id=event_id,
                       task_id=order["task_id"], amount=order["amount"], counter=counter,
                       counter_key=order["aggregate_id"], store_rev=rev)
        if self.bug != "ack-before-commit":
            self.ack(method.delivery_tag, event_id)

    def retrying(self, order):
        """``commit``, tried again while PostgreSQL is down, the message kept meanwhile."""
        while True:
            try:
                return commit(self.store, order, self.bug != "no-dedup", self.uncertain)
            except Uncertain as error:
                if error.rev is not None:
                    self.uncertain[order["event_id"]] = error.rev
            except STORE_DOWN:
                pass
            if self.stop.is_set():
                raise SystemExit(0)
            self.connection.sleep(0.2)

    def ack(self, tag, event_id):
        """basic.ack; when it cannot be sent the span is an ERROR (no ACK)."""
        with self.tracer.start_as_current_span("orders ack", attributes={
            "messaging.system": "rabbitmq",
            "messaging.destination.name": QUEUE,
            "messaging.operation.type": "settle",
            "messaging.operation.name": "ack",
            "messaging.message.id": event_id,
        }, record_exception=False, set_status_on_exception=False) as span:
            try:
                self.channel.basic_ack(tag)
            except BROKER_DOWN as error:
                span.set_status(Status(StatusCode.ERROR, f"no ACK: {error!r}"))


if __name__ == "__main__":
    Worker().run()
