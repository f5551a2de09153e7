"""What the API, the relay and the worker share: tracing set-up, the SQLite store and the Redis broker.

The store is one SQLite file (WAL, three processes write it). Every transaction the trace reports
bumps ``store_rev.n`` inside itself, so rows committed together carry the same ``outbox.store_rev``.

The broker is a Redis list. A publish is one Lua script: it numbers the copy (``broker_seq``),
pushes it to the queue ``queue`` and to the append-only ``log`` (what was ever published). The
worker moves a copy from ``queue`` to ``processing`` and counts its deliveries in one script; its
ACK removes the copy from ``processing``. A new worker life first puts back what its dead
predecessor left in ``processing``, so a crash between commit and ACK is a real redelivery.
"""

import json
import sqlite3
import sys

try:
    import redis
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON
except ImportError as missing:  # one line, its own exit code
    print(
        f"otel-python: missing Python package ({missing}): run scripts/deps.sh or "
        "pip install opentelemetry-sdk opentelemetry-exporter-otlp-json-file redis",
        file=sys.stderr,
    )
    sys.exit(3)

#: Who produced the trace (the `backend` column).
BACKEND = "python-sqlite-redis"

#: Exit code of a process that could not start (missing package: 3, see above).
EXIT_SETUP = 2

QUEUE, PROCESSING, LOG, SEQ, DELIVERIES = "queue", "processing", "log", "broker_seq", "deliveries"

# Publish one copy: number it, queue it, keep it in the log. The reply is the publish ACK.
PUBLISH = """
local n = redis.call('INCR', KEYS[3])
local item = n .. '|' .. ARGV[1]
redis.call('RPUSH', KEYS[1], item)
redis.call('RPUSH', KEYS[2], item)
return n
"""

# Take the next copy and count this delivery of it.
FETCH = """
local item = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
if not item then return false end
local seq = string.match(item, '^(%d+)|')
return {item, redis.call('HINCRBY', KEYS[3], seq, 1)}
"""

# A new worker life: put back, in order, what the previous life took and never ACKed.
RECOVER = """
local moved = 0
while true do
  local item = redis.call('RPOP', KEYS[1])
  if not item then return moved end
  redis.call('LPUSH', KEYS[2], item)
  moved = moved + 1
end
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_rev (n INTEGER NOT NULL);
INSERT INTO store_rev SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM store_rev);
CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, amount INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS outbox (event_id TEXT PRIMARY KEY, task_id TEXT NOT NULL,
    aggregate_id TEXT NOT NULL, aggregate_seq INTEGER NOT NULL, amount INTEGER NOT NULL,
    published INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS processed (event_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, event_id TEXT NOT NULL,
    task_id TEXT NOT NULL, amount INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counter (value INTEGER NOT NULL);
INSERT INTO counter SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM counter);
"""


def tracer(actor, incarnation, spans_path, run_id, scenario):
    """A tracer whose every span is written to ``spans_path`` as OTLP JSON Lines when it ends.

    The resource names the actor (``service.name``) and its life (``outbox.incarnation``); the
    run, scenario and backend ride on the resource too, so no span has to repeat them.
    ``ALWAYS_ON``: a sampled-out commit would look like a missing one. ``SimpleSpanProcessor``
    exports each span as it ends, so a process killed with SIGKILL has lost nothing it finished.
    """
    resource = Resource.create(
        {
            "service.name": actor,
            "service.instance.id": f"{actor}-{incarnation}",
            "outbox.incarnation": incarnation,
            "outbox.run_id": run_id,
            "outbox.scenario": scenario,
            "outbox.backend": BACKEND,
        }
    )
    provider = TracerProvider(resource=resource, sampler=ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(spans_path)))
    return provider, provider.get_tracer("outbox-example")


def outbox(kind, **fields):
    """The ``outbox.*`` attributes of one event: ``outbox.kind`` and the given columns.

    ``detail`` is given as a dict and written as JSON text; ``None`` values are left out.
    """
    attributes = {"outbox.kind": kind}
    for column, value in fields.items():
        if value is None:
            continue
        if column == "detail":
            value = json.dumps(value, separators=(",", ":"))
        attributes[f"outbox.{column}"] = value
    return attributes


def event_span(tracer_, name, kind, **fields):
    """Emits one span that is one event (its end time is the event's time)."""
    with tracer_.start_as_current_span(name, attributes=outbox(kind, **fields)):
        pass


def store(path):
    """A connection to the SQLite store; transactions are begun explicitly with ``begin``.

    Usable from any thread, one at a time (the API serialises its requests with a lock).
    """
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


def begin(db):
    """Begins a write transaction (taking the write lock now, so it never has to upgrade)."""
    db.execute("BEGIN IMMEDIATE")


def bump_rev(db):
    """Bumps the store's commit number inside the open transaction and returns it."""
    db.execute("UPDATE store_rev SET n = n + 1")
    return db.execute("SELECT n FROM store_rev").fetchone()[0]


def broker(port):
    """A Redis client on the loopback port."""
    return redis.Redis(host="127.0.0.1", port=port, decode_responses=True)


def role_arguments(description):
    """The arguments every role takes from the supervisor."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--db", required=True, help="the SQLite file")
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--spans", required=True, help="OTLP JSON Lines file this life writes")
    parser.add_argument("--incarnation", type=int, default=0)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--scenario", default="crash-before-ack")
    return parser


def stop_on_sigterm():
    """Returns a flag that turns true on SIGTERM, so a loop can end and the process exit 0."""
    import signal
    import threading

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop
