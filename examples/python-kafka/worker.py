"""The worker: one member of the consumer group ``orders-workers``; takes an order from Kafka, does
its work, commits the effect in PostgreSQL, then commits the record's offset (synchronously): the
offset commit is its ACK.

One transaction holds the dedup key (``processed``, a primary key: the event id), the result, the
completed task and the aggregate's counter (``counters``, one row per aggregate: ``counter_key``
is the aggregate id). It inserts the key first (``ON CONFLICT DO NOTHING``); a copy whose key is
already there is suppressed (no effect), and its offset committed. Spans, each ending (and
exported) right after its step:

- ``orders receive`` (``messaging.operation.type = receive``, ``messaging.message.id`` = the
  record's ``event_id`` header, the record's partition and offset: ``messaging.kafka.offset`` and
  ``outbox.broker_seq`` = the offset, ``outbox.partition``): read as ``delivered``. Kafka counts
  no deliveries: a record read again (after a worker died before its offset commit, or after a
  rebalance) is ``delivered`` again, at the same offset, and ``outbox.attempt`` stays off;
- ``outbox commit``: ``effect_committed`` with ``store_rev``, ``amount``, ``counter`` and
  ``counter_key``, or ``duplicate_suppressed``;
- ``orders ack`` (``messaging.operation.type = settle``, ``messaging.operation.name = commit``,
  the record's offset): read as ``acked``; ERROR when the offset commit failed (the broker down:
  tried again; the partition gone to another member in a rebalance: that member reads the record
  again from the last committed offset).

The work between receive and commit takes ``WORK_MS`` milliseconds (default 100). While
PostgreSQL is down the worker keeps the record and tries the commit again; a commit whose reply
was lost is found by its key, written by this life with the number it took, and reported then.

``BUG=offset-before-effect``: the offset is committed before the effect; a worker killed between
the two loses the order (the group reads on from the next offset).
``BUG=dedup-on-offset``: the dedup key is the record's partition and offset, not the event id: a
second produce of one event (a relay that died before its mark, a lost produce acknowledgement)
is a new offset, and is applied again.
"""

import json
import time

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (GROUP, LIFE, STORE_DOWN, TOPIC, KafkaError, KafkaException, Store, Uncertain, bug,
                    confluent_kafka, event_span, kafka_config, next_rev, number, position,
                    stop_on_sigterm, tracer)


#: Offset commit errors that say the partition is no longer this member's: not tried again.
MOVED_ON = (KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID,
            KafkaError.REBALANCE_IN_PROGRESS, KafkaError._NO_OFFSET, KafkaError._STATE,
            KafkaError.FENCED_INSTANCE_ID)


def commit(store, order, key, uncertain):
    """The effect's transaction: ``(store_rev, counter)``, or ``None`` for a duplicate.

    A dedup ``key`` already there means a duplicate, unless it is this life's own commit whose
    reply was lost (``uncertain`` holds its number): that one is reported.
    """
    event_id, task_id = order["event_id"], order["task_id"]
    counter_key, amount = order["aggregate_id"], order["amount"]

    def body(cur, attempt):
        cur.execute("INSERT INTO processed (dedup_key, event_id, store_rev, counter, committed_by)"
                    " VALUES (%s, %s, 0, 0, %s) ON CONFLICT (dedup_key) DO NOTHING"
                    " RETURNING dedup_key", (key, event_id, LIFE))
        if cur.fetchone() is None:
            cur.execute("SELECT store_rev, counter, committed_by FROM processed"
                        " WHERE dedup_key = %s", (key,))
            rev, counter, by = cur.fetchone()
            if by == LIFE and uncertain.get(key) == rev:
                return rev, counter
            return None
        cur.execute("INSERT INTO counters (counter_key, value) VALUES (%s, %s)"
                    " ON CONFLICT (counter_key) DO UPDATE SET value = counters.value"
                    " + EXCLUDED.value RETURNING value", (counter_key, amount))
        (counter,) = cur.fetchone()
        rev = attempt["rev"] = next_rev(cur)
        cur.execute("INSERT INTO results (event_id, task_id, amount) VALUES (%s, %s, %s)",
                    (event_id, task_id, amount))
        cur.execute("UPDATE tasks SET done = true WHERE task_id = %s", (task_id,))
        cur.execute("UPDATE processed SET store_rev = %s, counter = %s WHERE dedup_key = %s",
                    (rev, counter, key))
        return rev, counter

    return store.transaction(body)


class Member:
    """This worker's membership of the group, subscribed to the topic, committing its offsets
    itself; it knows the partitions it holds.

    tansu 0.6 may name as the leader of a new generation a member that is gone (this worker's own
    former member id, after its session timed out): the leader's assignment never comes, and the
    member is given no partition while it goes on heartbeating. The group has one worker, so a
    member left with no partition for two session timeouts joins again (unsubscribe, subscribe).
    """

    def __init__(self):
        self.session_ms = number("SESSION_TIMEOUT_MS", 6000)
        self.consumer = confluent_kafka.Consumer(kafka_config(**{
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.session_ms,
            "heartbeat.interval.ms": max(100, self.session_ms // 6),
            "fetch.wait.max.ms": 50,
            "partition.assignment.strategy": "range",
        }))
        self.held = []
        self.since = time.monotonic()
        self.subscribe()

    def subscribe(self):
        """Subscribes to the topic, noting every change of the partitions held."""
        self.consumer.subscribe([TOPIC], on_assign=self.said("assigned"),
                                on_revoke=self.said("revoked"), on_lost=self.said("lost"))

    def said(self, what):
        """A rebalance callback: notes and prints the partitions assigned, revoked or lost."""
        def callback(_, partitions):
            numbers = [p.partition for p in partitions]
            self.held = numbers if what == "assigned" else []
            self.since = time.monotonic()
            print(f"{LIFE}: {what} partitions {numbers}", flush=True)
        return callback

    def poll(self, timeout):
        """The next record (or ``None``); joins again when left with no partition too long."""
        if not self.held and time.monotonic() - self.since > 2 * self.session_ms / 1000:
            print(f"{LIFE}: no partition for {2 * self.session_ms} ms: joining again", flush=True)
            self.consumer.unsubscribe()
            self.since = time.monotonic()
            self.subscribe()
        return self.consumer.poll(timeout)


class Worker:
    """One worker life: its store, its group member, its tracer."""

    def __init__(self):
        self.bug = bug()
        self.work_ms = number("WORK_MS", 100)
        self.provider, self.tracer = tracer("orders-worker")
        self.stop = stop_on_sigterm()
        self.store = Store()
        self.member = Member()
        self.uncertain = {}

    def run(self):
        """Takes and handles records until SIGTERM, then leaves the group."""
        while not self.stop.is_set():
            message = self.member.poll(0.05)
            if message is None or message.error() is not None:
                continue
            self.handle(message)
        self.member.consumer.close()
        self.provider.shutdown()

    def handle(self, message):
        """Receive, work, commit (or suppress), commit the offset: one delivery of one copy."""
        order = json.loads(message.value())
        event_id = order["event_id"]
        headers = dict(message.headers() or [])
        with self.tracer.start_as_current_span("orders receive", kind=SpanKind.CONSUMER, attributes={
            "messaging.system": "kafka",
            "messaging.destination.name": TOPIC,
            "messaging.consumer.group.name": GROUP,
            "messaging.operation.type": "receive",
            "messaging.message.id": (headers.get("event_id") or event_id.encode()).decode(),
            "outbox.task_id": order["task_id"],
            **position(message),
        }):
            pass
        if self.bug == "offset-before-effect":
            self.ack(message, event_id)
        time.sleep(self.work_ms / 1000)
        if self.bug == "dedup-on-offset":
            key = f"{message.topic()}/{message.partition()}/{message.offset()}"
        else:
            key = event_id
        done = self.retrying(order, key)
        self.uncertain.pop(key, None)
        if done is None:
            event_span(self.tracer, "outbox commit", "duplicate_suppressed", event_id=event_id,
                       task_id=order["task_id"])
        else:
            rev, counter = done
            event_span(self.tracer, "outbox commit", "effect_committed", event_id=event_id,
                       task_id=order["task_id"], amount=order["amount"], counter=counter,
                       counter_key=order["aggregate_id"], store_rev=rev)
        if self.bug != "offset-before-effect":
            self.ack(message, event_id)

    def retrying(self, order, key):
        """``commit``, tried again while PostgreSQL is down, the record kept meanwhile."""
        while True:
            try:
                return commit(self.store, order, key, self.uncertain)
            except Uncertain as error:
                if error.rev is not None:
                    self.uncertain[key] = error.rev
            except STORE_DOWN:
                pass
            if self.stop.is_set():
                raise SystemExit(0)
            time.sleep(0.2)

    def ack(self, message, event_id):
        """Commits the offset after ``message``, synchronously; tried again while the broker
        cannot take it, given up when the partition went to another member (a rebalance)."""
        while True:
            with self.tracer.start_as_current_span("orders ack", attributes={
                "messaging.system": "kafka",
                "messaging.destination.name": TOPIC,
                "messaging.consumer.group.name": GROUP,
                "messaging.operation.type": "settle",
                "messaging.operation.name": "commit",
                "messaging.message.id": event_id,
                **position(message),
            }, record_exception=False, set_status_on_exception=False) as span:
                try:
                    self.member.consumer.commit(message=message, asynchronous=False)
                    return
                except KafkaException as error:
                    span.set_status(Status(StatusCode.ERROR, f"no offset commit: {error}"))
                    code = error.args[0].code()
            if code in MOVED_ON or self.stop.is_set():
                return
            time.sleep(0.2)


if __name__ == "__main__":
    Worker().run()
