"""What the API, the relay, the worker and the small commands share: configuration from the
environment, tracing, the SQLite store and the Redis broker.

Configuration (environment only; a bad value exits 2 with one line, a missing package exits 3):

- ``INV_DB``: the SQLite file. ``REDIS_URL``: the broker, ``redis://HOST:PORT/DB``.
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` (required by the three services), ``OTEL_EXPORTER_OTLP_PROTOCOL``
  (``http/protobuf``, the default, or ``grpc``), ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
  ``OTEL_TRACES_SAMPLER``: read by the OpenTelemetry SDK itself, as for any service.
- ``OTEL_SPAN_PROCESSOR``: ``simple`` (the default: ``span.end()`` returns once the span is
  exported) or ``batch`` (a ``BatchSpanProcessor``: spans are exported later, from a thread of
  their own, as ``OTEL_BSP_SCHEDULE_DELAY`` and ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` say; the
  recorder sets those for a role with ``export = "async"``, see outbox-system-batch.toml).
- ``BUG``: empty, ``no-dedup``, ``dedup-outside-tx`` or ``dedup-on-entry-id`` (see worker.py), or
  ``mark-first`` or ``mark-on-timeout`` (see relay.py).
- ``OUTBOX_OMIT``: a comma-separated list of ``outbox.*`` span attributes the processes leave off
  their spans (``broker_seq``, ``attempt``, ``store_rev``, ``task_id``, ...), as a service that does
  not have them would; ``kind`` leaves off every ``outbox.*`` span attribute, so only the standard
  messaging attributes remain, as on a service traced with plain OpenTelemetry. Empty by default.

The store is one SQLite file (WAL, three processes write it). Every transaction the trace reports
bumps ``store_rev.n`` inside itself, so rows committed together carry the same ``outbox.store_rev``.

The broker is a Redis Stream read by one consumer group. A publish is one script: it numbers the
copy (``broker_seq``, an INCR) and appends it to the stream, so the stream is also the log of
everything ever published. A worker reads new entries with XREADGROUP; an entry another consumer
has held for longer than the ACK wait is taken over with XAUTOCLAIM (a redelivery: Redis bumps its
delivery count), and a new worker life first claims what its previous life left unACKed.
"""

import json
import os
import signal
import sqlite3
import sys
import threading

PROGRAM = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "otel-python"


def fail(message, code=2):
    """One line on stderr, then exit (2: bad configuration)."""
    print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


try:
    import redis
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
except ImportError as missing:
    fail(
        f"missing Python package ({missing}): pip install opentelemetry-sdk "
        "opentelemetry-exporter-otlp-proto-http redis",
        3,
    )

#: The stream, its consumer group, and the counter that numbers the copies.
STREAM, GROUP, SEQ = "orders", "workers", "broker_seq"

#: Redis errors after which a process waits and tries again (a restarting or loading server).
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
              redis.exceptions.BusyLoadingError)

# Publish one copy: number it and append it. The reply is the publish ACK.
PUBLISH = """
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], '*', 'seq', n, 'body', ARGV[1])
return n
"""

# Take one entry for consumer ARGV[1]: the entry ARGV[3] names if this consumer still holds it (a
# new life claiming back what its previous life left; another consumer may have taken it over
# meanwhile), else one another consumer has held for ARGV[2] ms or more, else the next new one.
# Replies {entry id, seq, body, delivery count}, or false.
FETCH = """
local function reply(entry)
  local fields = {}
  for i = 1, #entry[2], 2 do fields[entry[2][i]] = entry[2][i + 1] end
  local pending = redis.call('XPENDING', KEYS[1], KEYS[2], entry[1], entry[1], 1)
  local count = 1
  if pending[1] then count = pending[1][4] end
  return {entry[1], fields['seq'], fields['body'], count}
end
if ARGV[3] ~= '' then
  local held = redis.call('XPENDING', KEYS[1], KEYS[2], ARGV[3], ARGV[3], 1)
  if held[1] and held[1][2] == ARGV[1] then
    local claimed = redis.call('XCLAIM', KEYS[1], KEYS[2], ARGV[1], 0, ARGV[3])
    if claimed[1] then return reply(claimed[1]) end
  end
  return false
end
local stale = redis.call('XAUTOCLAIM', KEYS[1], KEYS[2], ARGV[1], ARGV[2], '0-0', 'COUNT', 1)
if stale[2][1] then return reply(stale[2][1]) end
local new = redis.call('XREADGROUP', 'GROUP', KEYS[2], ARGV[1], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
if new and new[1] and new[1][2][1] then return reply(new[1][2][1]) end
return false
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

BUGS = ("no-dedup", "dedup-outside-tx", "mark-first", "dedup-on-entry-id", "mark-on-timeout")

#: The ``outbox.*`` span attributes to leave off (``OUTBOX_OMIT``).
OMIT = frozenset(c.strip() for c in os.environ.get("OUTBOX_OMIT", "").split(",") if c.strip())


def kept(attributes):
    """``attributes`` without the ``outbox.*`` ones ``OUTBOX_OMIT`` leaves off (``kind`` leaves off
    ``outbox.kind`` alone, as a helper that forgets it would)."""
    def keep(key):
        return not key.startswith("outbox.") or key[len("outbox."):] not in OMIT
    return {k: v for k, v in attributes.items() if keep(k)}


def set_kept(span, key, value):
    """``span.set_attribute(key, value)`` unless ``OUTBOX_OMIT`` leaves the attribute off."""
    for k, v in kept({key: value}).items():
        span.set_attribute(k, v)


def setting(name, default=None):
    """The environment variable ``name``; without a default it must be set and not empty."""
    value = os.environ.get(name, "")
    if value:
        return value
    if default is None:
        fail(f"{name} is not set")
    return default


def number(name, default):
    """A whole number of at least 0 from the environment."""
    text = setting(name, str(default))
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        fail(f"{name} must be a whole number of at least 0, not {text!r}")
    return value


def bug():
    """The bug this process is asked to have (``BUG``), or ``None``."""
    value = os.environ.get("BUG", "")
    if value and value not in BUGS:
        fail(f"BUG must be one of {', '.join(BUGS)} (or empty), not {value!r}")
    return value or None


def tracer():
    """A tracer exporting every span over OTLP when it ends, configured from the environment.

    The SDK reads the endpoint, the service name and the resource attributes (``outbox.actor``,
    ``outbox.incarnation``, ``outbox.run_id``, ``outbox.scenario``) from the standard variables.
    ``SimpleSpanProcessor`` exports synchronously: ``span.end()`` returns once the receiver has
    answered, so a process killed after a step has exported that step's span. With
    ``OTEL_SPAN_PROCESSOR=batch`` a ``BatchSpanProcessor`` exports them later, configured by the
    standard ``OTEL_BSP_*`` variables: a process killed after a step may have taken its next
    steps, and lost spans not exported yet.
    """
    setting("OTEL_EXPORTER_OTLP_ENDPOINT")
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    elif protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as missing:
            fail(f"missing Python package ({missing}): pip install "
                 "opentelemetry-exporter-otlp-proto-grpc", 3)
    else:
        fail(f"OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or grpc, not {protocol!r}")
    processor = os.environ.get("OTEL_SPAN_PROCESSOR", "") or "simple"
    if processor not in ("simple", "batch"):
        fail(f"OTEL_SPAN_PROCESSOR must be simple or batch, not {processor!r}")
    provider = TracerProvider(resource=Resource.create())
    if processor == "batch":
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    return provider, provider.get_tracer("inventory")


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
    return kept(attributes)


def event_span(tracer_, name, kind, **fields):
    """Emits one span that is one event: it ends (and is exported) now."""
    with tracer_.start_as_current_span(name, attributes=outbox(kind, **fields)):
        pass


def store():
    """A connection to the SQLite store (``INV_DB``); transactions begin explicitly with ``begin``.

    Usable from any thread, one at a time (the API serialises its requests with a lock).
    """
    path = setting("INV_DB")
    try:
        db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as error:
        fail(f"cannot open the SQLite store {path}: {error}")
    return db


def begin(db):
    """Begins a write transaction (taking the write lock now, so it never has to upgrade)."""
    db.execute("BEGIN IMMEDIATE")


def bump_rev(db):
    """Bumps the store's commit number inside the open transaction and returns it."""
    db.execute("UPDATE store_rev SET n = n + 1")
    return db.execute("SELECT n FROM store_rev").fetchone()[0]


def broker():
    """A Redis client on ``REDIS_URL`` (it reconnects by itself after a server restart)."""
    url = setting("REDIS_URL")
    try:
        return redis.Redis.from_url(url, decode_responses=True, socket_timeout=10,
                                    socket_connect_timeout=2)
    except ValueError as error:
        fail(f"REDIS_URL is not a Redis URL ({url}): {error}")


def stop_on_sigterm():
    """Returns a flag that turns true on SIGTERM or SIGINT, so a loop can end and exit 0."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop
