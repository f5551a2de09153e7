"""The worker: takes an order from the Redis Stream, does its work, commits the effect in SQLite,
then ACKs it.

One transaction holds the dedup key (``processed``), the result, the completed task and the
counter; it checks the key first, and a copy whose key is already there is suppressed (no effect)
and ACKed. Spans, each ending right after its step:

- ``orders receive`` (``messaging.operation.type = receive``, ``outbox.attempt`` = the delivery
  count Redis keeps): read as ``delivered``, or ``redelivered`` when the count is above 1;
- ``outbox commit``: ``effect_committed`` with ``store_rev``, ``amount`` and ``counter``, or
  ``duplicate_suppressed``;
- ``orders ack`` (``messaging.operation.type = settle``): read as ``acked``.

The work between receive and commit takes ``WORK_MS`` milliseconds (default 200). An entry another
worker has held unACKed for ``ACK_WAIT_MS`` (default 1000) is taken over and delivered again here;
a new life first takes back what its previous life left unACKed.

``BUG=no-dedup``: no dedup check, so a redelivered copy is applied again.
``BUG=dedup-outside-tx``: the key is checked before the work, outside the commit's transaction, and
inserted by the commit without a second look: two workers holding the same copy at once (one of
them paused past the ACK wait) both find no key and both commit an effect.
``BUG=dedup-on-entry-id``: the dedup key is the stream entry id, not the event id: a redelivered
entry is suppressed, but a second copy of the event (a relay that published again after a crash
before its mark) is a new entry and is applied again.
"""

import json
import time

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (FETCH, GROUP, REDIS_DOWN, STREAM, begin, broker, bug, bump_rev, event_span,
                    kept, number, setting, stop_on_sigterm, store, tracer)


def seen(db, event_id):
    """Whether the dedup key of ``event_id`` is committed."""
    return db.execute("SELECT 1 FROM processed WHERE event_id = ?", (event_id,)).fetchone() is not None


def commit(db, message, check, key):
    """The effect's transaction; returns ``(store_rev, counter)``, or ``None`` for a duplicate.

    ``check``: look for the dedup key ``key`` inside the transaction first (the correct worker).
    """
    event_id, task_id, amount = message["event_id"], message["task_id"], message["amount"]
    begin(db)
    try:
        if check and seen(db, key):
            db.execute("ROLLBACK")
            return None
        db.execute("INSERT OR IGNORE INTO processed (event_id) VALUES (?)", (key,))
        db.execute("INSERT INTO results (event_id, task_id, amount) VALUES (?, ?, ?)",
                   (event_id, task_id, amount))
        db.execute("UPDATE tasks SET done = 1 WHERE task_id = ?", (task_id,))
        db.execute("UPDATE counter SET value = value + ?", (amount,))
        (counter,) = db.execute("SELECT value FROM counter").fetchone()
        rev = bump_rev(db)
        db.execute("COMMIT")
        return rev, counter
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


class Worker:
    """One worker life: its store, its broker client, its consumer name and its tracer."""

    def __init__(self):
        self.bug = bug()
        self.work_s = number("WORK_MS", 200) / 1000
        self.ack_wait_ms = number("ACK_WAIT_MS", 1000)
        self.provider, self.tracer = tracer()
        self.consumer = setting("OTEL_SERVICE_NAME", "worker")
        self.db = store()
        self.client = broker()
        self.fetch = self.client.register_script(FETCH)
        self.stop = stop_on_sigterm()

    def leftovers(self):
        """The entries this consumer's previous life took and never ACKed."""
        while not self.stop.is_set():
            try:
                pending = self.client.xpending_range(STREAM, GROUP, "-", "+", 10_000,
                                                     consumername=self.consumer)
                return [entry["message_id"] for entry in pending]
            except REDIS_DOWN:
                self.stop.wait(0.2)
        return []

    def run(self):
        """Takes and handles entries until SIGTERM."""
        leftovers = self.leftovers()
        while not self.stop.is_set():
            claim = leftovers.pop(0) if leftovers else ""
            try:
                got = self.fetch(keys=[STREAM, GROUP], args=[self.consumer, self.ack_wait_ms, claim])
            except REDIS_DOWN:
                if claim:
                    leftovers.insert(0, claim)
                self.stop.wait(0.2)
                continue
            if got:
                self.handle(*got)
            elif not claim:
                self.stop.wait(0.02)
        self.provider.shutdown()

    def handle(self, entry_id, broker_seq, body, deliveries):
        """Receive, work, commit (or suppress), ACK: one delivery of one copy."""
        message = json.loads(body)
        event_id, broker_seq = message["event_id"], int(broker_seq)
        with self.tracer.start_as_current_span(
            "orders receive",
            kind=SpanKind.CONSUMER,
            attributes=kept({
                "messaging.system": "redis",
                "messaging.destination.name": STREAM,
                "messaging.operation.type": "receive",
                "messaging.message.id": event_id,
                "outbox.task_id": message["task_id"],
                "outbox.attempt": int(deliveries),
                "outbox.broker_seq": broker_seq,
                # The flag a RabbitMQ consumer has instead of a count.
                "outbox.redelivered": int(deliveries) > 1,
            }),
        ):
            pass
        if self.bug == "dedup-outside-tx" and seen(self.db, event_id):
            done = None
        else:
            time.sleep(self.work_s)
            key = entry_id if self.bug == "dedup-on-entry-id" else event_id
            done = commit(self.db, message, check=self.bug in (None, "dedup-on-entry-id"), key=key)
        if done is None:
            event_span(self.tracer, "outbox commit", "duplicate_suppressed", event_id=event_id,
                       task_id=message["task_id"])
        else:
            rev, counter = done
            event_span(self.tracer, "outbox commit", "effect_committed", event_id=event_id,
                       task_id=message["task_id"], amount=message["amount"], counter=counter,
                       store_rev=rev)
        self.ack(entry_id, event_id, broker_seq)

    def ack(self, entry_id, event_id, broker_seq):
        """XACK; without an answer the span is an ERROR (no ACK) and the entry will come back."""
        with self.tracer.start_as_current_span(
            "orders ack",
            attributes=kept({
                "messaging.system": "redis",
                "messaging.destination.name": STREAM,
                "messaging.operation.type": "settle",
                "messaging.operation.name": "ack",
                "messaging.message.id": event_id,
                "outbox.broker_seq": broker_seq,
            }),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                self.client.xack(STREAM, GROUP, entry_id)
            except REDIS_DOWN as error:
                span.set_status(Status(StatusCode.ERROR, f"no ACK: {error}"))


if __name__ == "__main__":
    Worker().run()
