"""What the API, the relay, the worker and the small commands share: configuration from the
environment, tracing, the PostgreSQL store and the Kafka broker.

Configuration (environment only; a bad value exits 2 with one line, a missing package exits 3):

- ``DATABASE_URL``: the PostgreSQL database (``postgresql://USER@HOST:PORT/DB``, over TCP).
- ``KAFKA_BOOTSTRAP``: the Kafka broker (``HOST:PORT``).
- ``PRODUCE_TIMEOUT_MS``: how long the relay waits for a produce's acknowledgement (default
  5000, librdkafka's ``message.timeout.ms``); ``SESSION_TIMEOUT_MS``: the worker's consumer group
  session (default 6000, Kafka's least).
- ``KAFKA_DEBUG``: librdkafka's ``debug`` contexts (``cgrp,fetch``...), logged on stderr.
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` (required by the three services), ``OTEL_SERVICE_NAME``,
  ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``: read by the OpenTelemetry SDK itself.
- ``BUG``: empty, ``offset-before-effect`` or ``dedup-on-offset`` (worker.py), ``mark-on-error``
  (relay.py).

Tracing is the OpenTelemetry SDK with its OTLP/HTTP exporter behind a ``SimpleSpanProcessor``:
``span.end()`` returns once the span is exported, so each step's span ends right after the step
and before the next one.

Every commit the trace reports takes ``nextval('store_rev')`` inside its transaction, after the
row locks that order it (the counter's row for an effect), and stores the number beside what it
wrote, so a retry that finds its own commit can report it with its number.

The broker is one topic, ``orders``, of one partition (so the offset alone orders every record,
and the order of each aggregate is the relay's order). The relay produces with ``acks=all`` and
waits for each record's delivery report; the worker is a member of the consumer group
``orders-workers``, committing its offsets itself (``enable.auto.commit=false``), synchronously,
after the effect.
"""

import os
import signal
import sys
import threading
import uuid

PROGRAM = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python-kafka"


def fail(message, code=2):
    """One line on stderr, then exit (2: bad configuration)."""
    print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


PACKAGES = ("pip install confluent-kafka 'psycopg[binary]' opentelemetry-sdk"
            " opentelemetry-exporter-otlp-proto-http")

try:
    import confluent_kafka
    import confluent_kafka.admin
    import psycopg
    from confluent_kafka import KafkaError, KafkaException
except ImportError as missing:
    fail(f"missing Python package ({missing}): {PACKAGES}", 3)

#: The topic (one partition) and the workers' consumer group.
TOPIC = "orders"
GROUP = "orders-workers"

#: Store errors after which the connection is gone (the outcome of a COMMIT in flight unknown).
STORE_DOWN = (psycopg.OperationalError, psycopg.InterfaceError)

#: Broker errors after which a small command gives up (the broker down or restarting).
BROKER_DOWN = (KafkaException, OSError)

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
  dedup_key text PRIMARY KEY, event_id text NOT NULL, store_rev bigint NOT NULL,
  counter bigint NOT NULL, committed_by text NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  id bigserial PRIMARY KEY, event_id text NOT NULL, task_id text NOT NULL, amount integer NOT NULL);
CREATE TABLE IF NOT EXISTS counters (counter_key text PRIMARY KEY, value bigint NOT NULL);
"""

BUGS = ("offset-before-effect", "dedup-on-offset", "mark-on-error")

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


def position(message):
    """The attributes that place a record on the broker: its partition and its offset, as the
    messaging conventions name them and as the contract's own columns."""
    return {
        "messaging.destination.partition.id": str(message.partition()),
        "messaging.kafka.offset": message.offset(),
        "outbox.broker_seq": message.offset(),
        "outbox.partition": message.partition(),
    }


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


def kafka_config(**extra):
    """The client configuration shared by every Kafka client here: the bootstrap broker, quick
    reconnects, errors at ``error`` level only (librdkafka logs a broker that went away)."""
    config = {
        "bootstrap.servers": setting("KAFKA_BOOTSTRAP"),
        "client.id": LIFE,
        "broker.address.family": "v4",
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "socket.connection.setup.timeout.ms": 2000,
        "topic.metadata.refresh.interval.ms": 5000,
        "log_level": 3,
    }
    if os.environ.get("KAFKA_DEBUG"):
        config["debug"] = os.environ["KAFKA_DEBUG"]
        config["log_level"] = 7
    config.update(extra)
    return config


def admin():
    """An admin client of ``KAFKA_BOOTSTRAP``."""
    return confluent_kafka.admin.AdminClient(kafka_config())


def watermarks(timeout=3.0):
    """The topic's partition 0 ``(low, high)`` offsets, and the group's committed offset there
    (``None`` where it committed none): asked with a consumer that joins no group."""
    consumer = confluent_kafka.Consumer(kafka_config(**{
        "group.id": GROUP, "enable.auto.commit": False}))
    try:
        partition = confluent_kafka.TopicPartition(TOPIC, 0)
        low, high = consumer.get_watermark_offsets(partition, timeout=timeout)
        (committed,) = consumer.committed([partition], timeout=timeout)
        offset = committed.offset if committed.offset >= 0 else None
        return low, high, offset
    finally:
        consumer.close()


def stop_on_sigterm():
    """Returns a flag that turns true on SIGTERM or SIGINT, so a loop can end and exit 0."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop

