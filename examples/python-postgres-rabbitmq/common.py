"""What the API, the relay, the worker and the small commands share: configuration from the
environment, tracing, the PostgreSQL store and the RabbitMQ broker.

Configuration (environment only; a bad value exits 2 with one line, a missing package exits 3):

- ``DATABASE_URL``: the PostgreSQL database (``postgresql://USER@HOST:PORT/DB``, over TCP).
- ``AMQP_URL``: the RabbitMQ node (``amqp://guest:guest@HOST:PORT/%2F``).
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` (required by the three services), ``OTEL_SERVICE_NAME``,
  ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``: read by the OpenTelemetry SDK itself.
- ``BUG``: empty, ``no-dedup`` or ``ack-before-commit`` (worker.py), ``mark-before-confirm``
  (relay.py).

Tracing is the OpenTelemetry SDK with its OTLP/HTTP exporter behind a ``SimpleSpanProcessor``:
``span.end()`` returns once the span is exported, so each step's span ends right after the step
and before the next one.

Every commit the trace reports takes ``nextval('store_rev')`` inside its transaction, after the
row locks that order it (the counter's row for an effect), and stores the number beside what it
wrote, so a retry that finds its own commit can report it with its number.

The broker is one durable quorum queue, ``orders``, on the default exchange. Messages are
persistent, published with publisher confirms; the workers consume with manual ACKs, one unACKed
message each (``basic_qos(prefetch_count=1)``). A message whose consumer's connection closes goes
back to the queue and is delivered again with the ``redelivered`` flag and the quorum queue's
``x-delivery-count`` header.
"""

import os
import signal
import sys
import threading
import uuid

PROGRAM = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python-postgres-rabbitmq"


def fail(message, code=2):
    """One line on stderr, then exit (2: bad configuration)."""
    print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


PACKAGES = "pip install pika 'psycopg[binary]' opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"

try:
    import pika
    import psycopg
except ImportError as missing:
    fail(f"missing Python package ({missing}): {PACKAGES}", 3)

#: The queue, and its declaration (durable, quorum: a confirmed message is on disk).
QUEUE = "orders"
QUEUE_ARGS = {"x-queue-type": "quorum"}

#: Broker errors after which a process connects again and tries again.
BROKER_DOWN = (pika.exceptions.AMQPError, OSError)

#: Store errors after which the connection is gone (the outcome of a COMMIT in flight unknown).
STORE_DOWN = (psycopg.OperationalError, psycopg.InterfaceError)

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS store_rev;
CREATE TABLE IF NOT EXISTS tasks (
  task_id text PRIMARY KEY, aggregate_id text NOT NULL, amount integer NOT NULL,
  done boolean NOT NULL DEFAULT false);
CREATE TABLE IF NOT EXISTS outbox (
  id bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, task_id text NOT NULL UNIQUE,
  aggregate_id text NOT NULL, aggregate_seq integer NOT NULL, amount integer NOT NULL,
  store_rev bigint NOT NULL, created_by text NOT NULL, published boolean NOT NULL DEFAULT false,
  UNIQUE (aggregate_id, aggregate_seq));
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (id) WHERE NOT published;
CREATE TABLE IF NOT EXISTS processed (
  event_id text PRIMARY KEY, store_rev bigint NOT NULL, counter bigint NOT NULL,
  committed_by text NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  id bigserial PRIMARY KEY, event_id text NOT NULL, task_id text NOT NULL, amount integer NOT NULL);
CREATE TABLE IF NOT EXISTS counters (counter_key text PRIMARY KEY, value bigint NOT NULL);
"""

BUGS = ("no-dedup", "ack-before-commit", "mark-before-confirm")

#: Who this process life is, as stored beside its commits (actor, life, a random part).
LIFE = "#".join((os.environ.get("OTEL_SERVICE_NAME") or PROGRAM,
                 os.environ.get("OUTBOX_INCARNATION") or "0", uuid.uuid4().hex[:8]))


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
    value = int(text) if text.isdigit() else -1
    if value < 0:
        fail(f"{name} must be a whole number of at least 0, not {text!r}")
    return value


def bug():
    """The bug this process is asked to have (``BUG``), or ``None``."""
    value = os.environ.get("BUG", "")
    if value and value not in BUGS:
        fail(f"BUG must be one of {', '.join(BUGS)} (or empty), not {value!r}")
    return value or None


def tracer(name):
    """A tracer exporting every span over OTLP/HTTP when it ends, configured from the environment
    (endpoint, service name and the resource's ``outbox.*`` attributes)."""
    setting("OTEL_EXPORTER_OTLP_ENDPOINT")
    # Imported here: the small commands (quiet, observe, setup, reset) start faster without.
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    except ImportError as missing:
        fail(f"missing Python package ({missing}): {PACKAGES}", 3)
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if protocol != "http/protobuf":
        fail(f"OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, not {protocol!r}")
    provider = TracerProvider(resource=Resource.create())
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    return provider, provider.get_tracer(name)


def outbox(kind, **fields):
    """The ``outbox.*`` attributes of one event: ``outbox.kind`` and the given columns (``None``
    left out)."""
    attributes = {"outbox.kind": kind}
    attributes.update({f"outbox.{k}": v for k, v in fields.items() if v is not None})
    return attributes


def event_span(tracer_, name, kind, **fields):
    """Emits one span that is one event: it ends (and is exported) now."""
    with tracer_.start_as_current_span(name, attributes=outbox(kind, **fields)):
        pass


class Uncertain(Exception):
    """The connection broke during a COMMIT: it may have committed. ``rev`` is the store_rev the
    transaction took, if it got that far."""

    def __init__(self, rev, cause):
        super().__init__(f"commit outcome unknown: {cause}")
        self.rev = rev


class Store:
    """One PostgreSQL connection (``DATABASE_URL``), opened again after the server restarts."""

    def __init__(self):
        self.url = setting("DATABASE_URL")
        self.conn = None

    def connect(self, stop=None):
        """The open connection, or a new one, waiting while the server is down (until ``stop``)."""
        while self.conn is None or self.conn.closed:
            try:
                self.conn = psycopg.connect(self.url, connect_timeout=2)
            except STORE_DOWN:
                if stop is not None and stop.is_set():
                    raise
                (stop or threading.Event()).wait(0.2)
        return self.conn

    def drop(self):
        """Forgets a connection that broke."""
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 (closing a broken connection)
                pass
        self.conn = None

    def transaction(self, body):
        """Runs ``body(cursor, attempt)`` in one transaction and commits; returns its result.

        ``body`` sets ``attempt["rev"]`` once it took its store_rev. A lost connection is raised
        as it came (nothing committed), or as ``Uncertain`` when it broke during the COMMIT.
        """
        conn = self.connect()
        attempt = {"rev": None}
        try:
            with conn.cursor() as cur:
                result = body(cur, attempt)
        except STORE_DOWN:
            self.drop()
            raise
        except BaseException:
            conn.rollback()
            raise
        try:
            conn.commit()
        except STORE_DOWN as error:
            self.drop()
            raise Uncertain(attempt["rev"], error) from error
        return result


def next_rev(cur):
    """Takes the next store_rev inside the open transaction."""
    cur.execute("SELECT nextval('store_rev')")
    return cur.fetchone()[0]


def broker_params(heartbeat=10):
    """The connection parameters of ``AMQP_URL``."""
    url = setting("AMQP_URL")
    try:
        params = pika.URLParameters(url)
    except (ValueError, pika.exceptions.AMQPError) as error:
        fail(f"AMQP_URL is not an AMQP URL ({url}): {error}")
    params.heartbeat = heartbeat
    params.connection_attempts = 1
    params.socket_timeout = 2
    params.blocked_connection_timeout = 10
    return params


def broker(stop=None):
    """A channel on a new connection to RabbitMQ, waiting while it is down (until ``stop``);
    the queue declared."""
    while True:
        try:
            connection = pika.BlockingConnection(broker_params())
            channel = connection.channel()
            channel.queue_declare(QUEUE, durable=True, arguments=QUEUE_ARGS)
            return connection, channel
        # pika raises ValueError when the socket closes while it connects (the proxy accepted,
        # the node behind it is down or restarting).
        except (*BROKER_DOWN, ValueError):
            if stop is not None and stop.is_set():
                raise
            (stop or threading.Event()).wait(0.2)


def stop_on_sigterm():
    """Returns a flag that turns true on SIGTERM or SIGINT, so a loop can end and exit 0."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop
