#!/usr/bin/env python3
"""Writes the OpenTelemetry fixtures of the analyzer's tests: traces of a tiny real outbox service
(a SQLite store with a queue table as its broker), written by the OpenTelemetry Python SDK and its
OTLP JSON file exporter, never by hand.

    generate.py OUT_DIR            all five traces into OUT_DIR (tests/fixtures/otel/ by default)

The traces:

- ``messaging.otlp.jsonl``: the service traced only with the standard messaging conventions
  (``messaging.operation.type`` send / receive / process / settle with ``messaging.operation.name``
  ``ack``; the older ``messaging.operation`` publish / receive / process on a second consumer), no
  ``outbox.*`` attribute at all: the trace says nothing of the store.
- ``batch-kill.otlp.jsonl``: the service with ``outbox.*`` attributes, its worker a child process
  exporting through a ``BatchSpanProcessor``, killed with SIGKILL halfway (``os.kill``) and started
  again: the spans the dead life had not exported are lost, while the ``observed`` read-back of the
  store counts every task done.
- ``counter-per-key.otlp.jsonl``: a stock per item (``outbox.counter_key``), from a
  ``counter_start`` object to an ``observed.counter`` object.
- ``counter-per-key-broken.otlp.jsonl``: the same with the worker stepping one item's stock wrong.
- ``rabbitmq.otlp.jsonl``: a new user's first try, a service on a RabbitMQ classic queue traced
  with standard OpenTelemetry only: the HTTP server span of its API and the database client spans
  of its PostgreSQL-style store (``db.system = postgresql``; the store here is the SQLite file
  standing in), and the messaging spans a RabbitMQ (AMQP) instrumentation sets
  (``messaging.system = rabbitmq``, ``messaging.operation.type``, ``messaging.destination.name``,
  ``messaging.message.id``, ``messaging.rabbitmq.message.redelivered`` on a copy delivered again):
  no position, no delivery count, no ``outbox.*`` attribute.

Missing Python packages: exit 3 with one line (``pip install opentelemetry-sdk
opentelemetry-exporter-otlp-json-file``).
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

try:
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as missing:
    print(f"generate.py: missing Python package ({missing}): pip install opentelemetry-sdk "
          "opentelemetry-exporter-otlp-json-file", file=sys.stderr)
    sys.exit(3)

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "fixtures" / "otel"

SCHEMA = """
CREATE TABLE rev (n INTEGER NOT NULL);
INSERT INTO rev VALUES (0);
CREATE TABLE tasks (task_id TEXT PRIMARY KEY, item TEXT NOT NULL, amount INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0);
CREATE TABLE outbox (event_id TEXT PRIMARY KEY, task_id TEXT NOT NULL,
    published INTEGER NOT NULL DEFAULT 0);
CREATE TABLE queue (seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL,
    deliveries INTEGER NOT NULL DEFAULT 0, acked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE processed (event_id TEXT PRIMARY KEY);
CREATE TABLE results (id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, amount INTEGER NOT NULL);
CREATE TABLE stock (item TEXT PRIMARY KEY, qty INTEGER NOT NULL);
"""


def open_db(path):
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    return db


def bump(db):
    """The store's commit number, bumped inside the caller's transaction."""
    db.execute("UPDATE rev SET n = n + 1")
    return db.execute("SELECT n FROM rev").fetchone()[0]


def tracer(path, service, run_id, incarnation=0, batch=False):
    """A tracer of its own provider, exporting to `path` as OTLP JSON Lines."""
    attrs = {"service.name": service, "outbox.run_id": run_id, "outbox.incarnation": incarnation}
    provider = TracerProvider(resource=Resource.create(attrs))
    exporter = FileSpanExporter(str(path))
    if batch:
        # Spans wait for a full batch or a long delay: a kill loses what is waiting.
        processor = BatchSpanProcessor(exporter, schedule_delay_millis=60_000,
                                       max_export_batch_size=32, max_queue_size=4096)
    else:
        processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return provider, provider.get_tracer(service)


def step(tr, kind, **cols):
    """One span carrying one outbox step."""
    attrs = {"outbox.kind": kind}
    for key, value in cols.items():
        if value is not None:
            attrs[f"outbox.{key}"] = json.dumps(value) if key == "detail" else value
    with tr.start_as_current_span(kind, attributes=attrs):
        pass


# ---------------------------------------------------------------------------------------------
# The service, with outbox.* attributes: API, relay and worker steps on one SQLite file.

def seed(db, tasks):
    """The tasks the API will accept: (task_id, item, amount)."""
    db.executescript(SCHEMA)
    return [(f"t-{n}", item, amount) for n, (item, amount) in enumerate(tasks, 1)]


def api(db, tr, tasks):
    for task_id, item, amount in tasks:
        event_id = f"evt-{task_id}"
        db.execute("BEGIN IMMEDIATE")
        rev = bump(db)
        db.execute("INSERT INTO tasks (task_id, item, amount) VALUES (?, ?, ?)",
                   (task_id, item, amount))
        db.execute("INSERT INTO outbox (event_id, task_id) VALUES (?, ?)", (event_id, task_id))
        db.execute("COMMIT")
        with tr.start_as_current_span("create task") as span:
            common = {"outbox.task_id": task_id, "outbox.event_id": event_id,
                      "outbox.store_rev": rev}
            span.add_event("task_accepted", {"outbox.kind": "task_accepted", **common})
            span.add_event("intent_recorded", {"outbox.kind": "intent_recorded", **common})


def relay(db, tr):
    pending = db.execute("SELECT event_id, task_id FROM outbox WHERE published = 0 "
                         "ORDER BY rowid").fetchall()
    for event_id, task_id in pending:
        step(tr, "publish_attempt", event_id=event_id, task_id=task_id, attempt=1)
        seq = db.execute("INSERT INTO queue (event_id) VALUES (?)", (event_id,)).lastrowid
        step(tr, "publish_acked", event_id=event_id, task_id=task_id, attempt=1, broker_seq=seq)
        db.execute("BEGIN IMMEDIATE")
        rev = bump(db)
        db.execute("UPDATE outbox SET published = 1 WHERE event_id = ?", (event_id,))
        db.execute("COMMIT")
        step(tr, "outbox_marked", event_id=event_id, task_id=task_id, store_rev=rev)


def take(db):
    """The next copy not ACKed, its delivery counted; None when the queue is drained."""
    db.execute("BEGIN IMMEDIATE")
    row = db.execute("SELECT seq, event_id FROM queue WHERE acked = 0 ORDER BY seq "
                     "LIMIT 1").fetchone()
    if row is None:
        db.execute("COMMIT")
        return None
    db.execute("UPDATE queue SET deliveries = deliveries + 1 WHERE seq = ?", (row[0],))
    n = db.execute("SELECT deliveries FROM queue WHERE seq = ?", (row[0],)).fetchone()[0]
    db.execute("COMMIT")
    return row[0], row[1], n


def work(db, tr, broken_item=None, pause=0.0, keyed=False):
    """Takes copies until the queue is drained: dedup key, result, done task and the item's
    stock in one transaction, then the ACK."""
    while (copy := take(db)) is not None:
        seq, event_id, n = copy
        task_id, item, amount = db.execute(
            "SELECT t.task_id, t.item, t.amount FROM outbox o JOIN tasks t "
            "ON t.task_id = o.task_id WHERE o.event_id = ?", (event_id,)).fetchone()
        step(tr, "delivered" if n == 1 else "redelivered", event_id=event_id, task_id=task_id,
             attempt=n, broker_seq=seq)
        db.execute("BEGIN IMMEDIATE")
        if db.execute("SELECT 1 FROM processed WHERE event_id = ?", (event_id,)).fetchone():
            db.execute("COMMIT")
            step(tr, "duplicate_suppressed", event_id=event_id, task_id=task_id)
        else:
            rev = bump(db)
            key = item if keyed else "all"
            # The broken build adds one too many to one item's stock.
            extra = 1 if item == broken_item else 0
            db.execute("INSERT INTO processed VALUES (?)", (event_id,))
            db.execute("INSERT INTO results (event_id, amount) VALUES (?, ?)", (event_id, amount))
            db.execute("UPDATE tasks SET done = 1 WHERE task_id = ?", (task_id,))
            db.execute("UPDATE stock SET qty = qty + ? WHERE item = ?", (amount + extra, key))
            counter = db.execute("SELECT qty FROM stock WHERE item = ?", (key,)).fetchone()[0]
            db.execute("COMMIT")
            step(tr, "effect_committed", event_id=event_id, task_id=task_id, amount=amount,
                 counter=counter, store_rev=rev, counter_key=item if keyed else None)
        time.sleep(pause)
        db.execute("UPDATE queue SET acked = 1 WHERE seq = ?", (seq,))
        step(tr, "acked", event_id=event_id, task_id=task_id, broker_seq=seq)


def observe(db, keyed):
    one = lambda q: db.execute(q).fetchone()[0]
    stock = dict(db.execute("SELECT item, qty FROM stock ORDER BY item").fetchall())
    return {
        "tasks": one("SELECT count(*) FROM tasks"),
        "tasks_done": one("SELECT count(*) FROM tasks WHERE done = 1"),
        "results": one("SELECT count(*) FROM results"),
        "dedup_keys": one("SELECT count(*) FROM processed"),
        "stream_messages": one("SELECT count(*) FROM queue"),
        "outbox_published": one("SELECT count(*) FROM outbox WHERE published = 1"),
        "outbox_pending": one("SELECT count(*) FROM outbox WHERE published = 0"),
        "counter": stock if keyed else stock["all"],
    }


def counter_per_key(out, broken):
    """API, relay and worker in one process, a stock per item."""
    run_id = "counter-per-key" + ("-broken" if broken else "")
    path = out / f"{run_id}.otlp.jsonl"
    work_dir = out / f".{run_id}"
    work_dir.mkdir(exist_ok=True)
    db = open_db(work_dir / "store.db")
    start = {"apple": 10, "pear": 5, "plum": 0}
    items = ["apple", "pear", "apple", "plum", "pear", "apple", "pear", "plum"]
    tasks = seed(db, [(item, n + 1) for n, item in enumerate(items)])
    db.executemany("INSERT INTO stock VALUES (?, ?)", start.items())
    providers = []
    for role in ["recorder", "api", "relay", "worker", "observer"]:
        providers.append(tracer(path, role, run_id))
    (_, rec), (_, api_t), (_, relay_t), (_, worker_t), (_, obs) = providers
    kinds = ["run_start", "task_accepted", "intent_recorded", "publish_attempt", "publish_acked",
             "outbox_marked", "delivered", "redelivered", "effect_committed",
             "duplicate_suppressed", "acked", "observed", "run_end"]
    step(rec, "run_start", detail={"tasks": len(tasks), "counter_start": start, "records": kinds})
    api(db, api_t, tasks)
    relay(db, relay_t)
    work(db, worker_t, broken_item="pear" if broken else None, keyed=True)
    step(obs, "observed", detail=observe(db, keyed=True))
    step(rec, "run_end", detail={"recovered": True})
    for provider, _ in providers:
        provider.shutdown()
    return path


def batch_kill(out):
    """The worker a child process exporting in batches, killed with SIGKILL halfway."""
    run_id = "batch-kill"
    path = out / f"{run_id}.otlp.jsonl"
    work_dir = out / f".{run_id}"
    work_dir.mkdir(exist_ok=True)
    db_path = work_dir / "store.db"
    db = open_db(db_path)
    tasks = seed(db, [("all", 1 + n % 5) for n in range(40)])
    db.execute("INSERT INTO stock VALUES ('all', 0)")
    providers = [tracer(path, role, run_id) for role in ["recorder", "api", "relay", "observer"]]
    (_, rec), (_, api_t), (_, relay_t), (_, obs) = providers
    step(rec, "run_start", detail={"tasks": len(tasks), "counter_start": 0})
    api(db, api_t, tasks)
    relay(db, relay_t)
    lives = []
    for life in range(2):
        spans = work_dir / f"worker-{life}.otlp.jsonl"
        child = subprocess.Popen([sys.executable, __file__, "--worker", str(db_path), str(spans),
                                  run_id, str(life)])
        if life == 0:
            # Kill it halfway: the spans waiting in its batch processor die with it.
            while db.execute("SELECT count(*) FROM results").fetchone()[0] < 20:
                time.sleep(0.005)
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            step(rec, "restart", actor="worker", incarnation=1)
        else:
            if child.wait() != 0:
                sys.exit(f"generate.py: the worker's second life failed ({child.returncode})")
        lives.append(spans)
    step(obs, "observed", detail=observe(db, keyed=False))
    step(rec, "run_end", detail={"recovered": True})
    for provider, _ in providers:
        provider.shutdown()
    with open(path, "a") as f:
        for spans in lives:
            if spans.exists():
                f.write(spans.read_text())
    return path


def worker_life(db_path, spans, run_id, life):
    """One life of the worker (a child process): a batch processor, slow enough to be killed."""
    provider, tr = tracer(spans, "worker", run_id, incarnation=int(life), batch=True)
    db = open_db(db_path)
    work(db, tr, pause=0.01)
    provider.shutdown()


def messaging(out):
    """The service traced only with the messaging conventions: no outbox.* attribute."""
    run_id = "messaging"
    path = out / f"{run_id}.otlp.jsonl"
    work_dir = out / f".{run_id}"
    work_dir.mkdir(exist_ok=True)
    db = open_db(work_dir / "store.db")
    tasks = seed(db, [("all", 1 + n % 3) for n in range(6)])
    db.execute("INSERT INTO stock VALUES ('all', 0)")
    producer_p, producer = tracer(path, "orders-relay", run_id)
    current_p, current = tracer(path, "orders-worker", run_id)
    older_p, older = tracer(path, "orders-audit", run_id)
    for task_id, _, amount in tasks:
        event_id = f"evt-{task_id}"
        db.execute("INSERT INTO tasks (task_id, item, amount) VALUES (?, 'all', ?)",
                   (task_id, amount))
        with producer.start_as_current_span("send orders", kind=SpanKind.PRODUCER, attributes={
                "messaging.system": "sqlite", "messaging.operation.type": "send",
                "messaging.destination.name": "orders", "messaging.message.id": event_id}):
            db.execute("INSERT INTO queue (event_id) VALUES (?)", (event_id,))
    while (copy := take(db)) is not None:
        seq, event_id, _ = copy
        base = {"messaging.system": "sqlite", "messaging.destination.name": "orders",
                "messaging.message.id": event_id}
        with current.start_as_current_span("receive orders", kind=SpanKind.CONSUMER,
                                           attributes={**base, "messaging.operation.type": "receive"}):
            pass
        with current.start_as_current_span("process orders", kind=SpanKind.CONSUMER,
                                           attributes={**base, "messaging.operation.type": "process"}):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR IGNORE INTO processed VALUES (?)", (event_id,))
            db.execute("UPDATE stock SET qty = qty + 1 WHERE item = 'all'")
            db.execute("COMMIT")
        with current.start_as_current_span("ack orders", kind=SpanKind.CLIENT, attributes={
                **base, "messaging.operation.type": "settle", "messaging.operation.name": "ack"}):
            db.execute("UPDATE queue SET acked = 1 WHERE seq = ?", (seq,))
        # An older instrumentation on an audit consumer: `messaging.operation` only; a failed
        # settle is no ACK.
        with older.start_as_current_span("orders process", kind=SpanKind.CONSUMER, attributes={
                **base, "messaging.operation": "process"}):
            pass
        with older.start_as_current_span("orders nack", kind=SpanKind.CLIENT, attributes={
                **base, "messaging.operation.type": "settle",
                "messaging.operation.name": "nack"}) as span:
            span.set_status(Status(StatusCode.ERROR, "audit refused"))
    for provider in [producer_p, current_p, older_p]:
        provider.shutdown()
    return path


def rabbitmq(out):
    """Standard OpenTelemetry only, on a RabbitMQ classic queue: nothing names a kind."""
    run_id = "rabbitmq"
    path = out / f"{run_id}.otlp.jsonl"
    work_dir = out / f".{run_id}"
    work_dir.mkdir(exist_ok=True)
    db = open_db(work_dir / "store.db")
    db.executescript(SCHEMA)
    api_p, api_t = tracer(path, "orders-api", run_id)
    relay_p, relay_t = tracer(path, "orders-relay", run_id)
    worker_p, worker_t = tracer(path, "orders-worker", run_id)
    sql = {"db.system": "postgresql", "db.name": "orders"}
    amqp = {"messaging.system": "rabbitmq", "messaging.destination.name": "orders"}
    for n in range(8):
        task_id, event_id = f"t-{n:02}", f"evt-{n:02}"
        with api_t.start_as_current_span("POST /orders", kind=SpanKind.SERVER, attributes={
                "http.request.method": "POST", "http.route": "/orders",
                "http.response.status_code": 201}):
            with api_t.start_as_current_span("INSERT orders", kind=SpanKind.CLIENT, attributes={
                    **sql, "db.operation.name": "INSERT"}):
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT INTO tasks (task_id, item, amount) VALUES (?, 'all', 1)",
                           (task_id,))
                db.execute("INSERT INTO outbox (event_id, task_id) VALUES (?, ?)",
                           (event_id, task_id))
                db.execute("COMMIT")
    for event_id, in db.execute("SELECT event_id FROM outbox WHERE published = 0").fetchall():
        with relay_t.start_as_current_span("orders publish", kind=SpanKind.PRODUCER, attributes={
                **amqp, "messaging.operation.type": "publish", "messaging.message.id": event_id}):
            db.execute("INSERT INTO queue (event_id) VALUES (?)", (event_id,))
        with relay_t.start_as_current_span("UPDATE outbox", kind=SpanKind.CLIENT, attributes={
                **sql, "db.operation.name": "UPDATE"}):
            db.execute("UPDATE outbox SET published = 1 WHERE event_id = ?", (event_id,))
    copies = list(db.execute("SELECT seq, event_id FROM queue ORDER BY seq").fetchall())
    # The broker hands the first copy out twice: the first consumer channel closed before its ACK.
    for i, (seq, event_id) in enumerate([copies[0]] + copies):
        again = i == 1
        attrs = {**amqp, "messaging.message.id": event_id,
                 "messaging.rabbitmq.message.redelivered": again}
        with worker_t.start_as_current_span("orders process", kind=SpanKind.CONSUMER,
                                            attributes={**attrs,
                                                        "messaging.operation.type": "process"}):
            if i == 0:
                continue
            with worker_t.start_as_current_span("INSERT results", kind=SpanKind.CLIENT,
                                                attributes={**sql, "db.operation.name": "INSERT"}):
                db.execute("BEGIN IMMEDIATE")
                fresh = db.execute("INSERT OR IGNORE INTO processed VALUES (?)",
                                   (event_id,)).rowcount
                if fresh:
                    db.execute("INSERT INTO results (event_id, amount) VALUES (?, 1)",
                               (event_id,))
                    db.execute("UPDATE tasks SET done = 1 WHERE task_id = "
                               "(SELECT task_id FROM outbox WHERE event_id = ?)", (event_id,))
                db.execute("COMMIT")
        with worker_t.start_as_current_span("orders ack", kind=SpanKind.CLIENT, attributes={
                **amqp, "messaging.message.id": event_id, "messaging.operation.type": "settle",
                "messaging.operation.name": "ack"}):
            db.execute("UPDATE queue SET acked = 1 WHERE seq = ?", (seq,))
    for provider in [api_p, relay_p, worker_p]:
        provider.shutdown()
    return path


FIXTURES = ["messaging", "batch-kill", "counter-per-key", "counter-per-key-broken", "rabbitmq"]


def main(argv):
    if argv[:1] == ["--worker"]:
        worker_life(*argv[1:5])
        return
    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    for name in FIXTURES:
        (out / f"{name}.otlp.jsonl").unlink(missing_ok=True)
        work_dir = out / f".{name}"
        if work_dir.exists():
            for f in work_dir.iterdir():
                f.unlink()
    written = [messaging(out), batch_kill(out), counter_per_key(out, broken=False),
               counter_per_key(out, broken=True), rabbitmq(out)]
    for name in FIXTURES:
        work_dir = out / f".{name}"
        for f in work_dir.iterdir():
            f.unlink()
        work_dir.rmdir()
    for path in written:
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
