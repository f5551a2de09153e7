/**
 * What the API, the relay, the worker and the small commands share: configuration from the
 * environment, tracing, the PostgreSQL store and the NATS JetStream broker.
 *
 * Configuration (environment only; a bad value exits 2 with one line, a missing package exits 3):
 *
 * - `DATABASE_URL`: the PostgreSQL database. `NATS_URL`: the NATS server (JetStream enabled).
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (required by the three services), `OTEL_SERVICE_NAME`,
 *   `OTEL_RESOURCE_ATTRIBUTES`: read by the OpenTelemetry SDK itself, as for any service.
 *   `OTEL_SDK_DISABLED=true` (the specification's switch): no span is made or exported.
 * - `BUG`: empty, `mark-before-ack` or `mark-on-timeout` (relay.js), `ack-before-commit`,
 *   `racy-dedup` or `rolled-back-span` (worker.js).
 *
 * Tracing is the OpenTelemetry JS SDK with its OTLP protobuf exporter and a simple span
 * processor, plus the `pg` auto-instrumentation (so `db.*` spans appear beside the `outbox.*`
 * ones). The JS SDK exports in the background: `span.end()` returns before the export. So every
 * step ends its span and then awaits `provider.forceFlush()` (which waits for the pending
 * exports) before the next step starts: each step's span has reached the receiver, and been
 * answered, before the process goes on, as with a synchronous exporter (`export = "sync"`).
 *
 * Every commit the trace reports takes `nextval('store_rev')` inside its transaction, after the
 * row locks that order it (the counter's row for an effect), so rows committed together carry the
 * same `outbox.store_rev` and one counter's commits are numbered in the order they took it.
 */

'use strict';

const path = require('path');

const PROGRAM = path.basename(process.argv[1] || 'node-postgres', '.js');

/** One line on stderr, then exit (2: bad configuration). */
function fail(message, code = 2) {
  process.stderr.write(`${PROGRAM}: ${message}\n`);
  process.exit(code);
}

function need(name) {
  try {
    return require(name);
  } catch (error) {
    if (error && error.code === 'MODULE_NOT_FOUND') {
      fail(`missing npm package ${name}: run npm ci in ${__dirname}`, 3);
    }
    throw error;
  }
}

const api = need('@opentelemetry/api');
const { NodeTracerProvider } = need('@opentelemetry/sdk-trace-node');
const { SimpleSpanProcessor } = need('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = need('@opentelemetry/exporter-trace-otlp-proto');
const { registerInstrumentations } = need('@opentelemetry/instrumentation');
const { PgInstrumentation } = need('@opentelemetry/instrumentation-pg');
const { defaultResource, detectResources, envDetector } = need('@opentelemetry/resources');

/** The stream, its subject and the workers' durable consumer. */
const STREAM = 'ORDERS';
const SUBJECT = 'orders';
const CONSUMER = 'workers';

const SCHEMA = `
CREATE SEQUENCE IF NOT EXISTS store_rev;
CREATE TABLE IF NOT EXISTS tasks (
  task_id text PRIMARY KEY, aggregate_id text NOT NULL, amount integer NOT NULL,
  done boolean NOT NULL DEFAULT false);
CREATE TABLE IF NOT EXISTS outbox (
  id bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, task_id text NOT NULL UNIQUE,
  aggregate_id text NOT NULL, aggregate_seq integer NOT NULL, amount integer NOT NULL,
  store_rev bigint NOT NULL, created_by text NOT NULL, published boolean NOT NULL DEFAULT false,
  UNIQUE (aggregate_id, aggregate_seq));
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (aggregate_id, aggregate_seq) WHERE NOT published;
CREATE TABLE IF NOT EXISTS processed (
  event_id text PRIMARY KEY, store_rev bigint NOT NULL, counter bigint NOT NULL,
  committed_by text NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  id bigserial PRIMARY KEY, event_id text NOT NULL, task_id text NOT NULL, amount integer NOT NULL);
CREATE TABLE IF NOT EXISTS counters (counter_key text PRIMARY KEY, value bigint NOT NULL);
`;

const BUGS = ['mark-before-ack', 'mark-on-timeout', 'ack-before-commit', 'racy-dedup', 'rolled-back-span'];

/** The environment variable `name`; without a default it must be set and not empty. */
function setting(name, fallback) {
  const value = process.env[name] || '';
  if (value) return value;
  if (fallback === undefined) fail(`${name} is not set`);
  return fallback;
}

/** A whole number of at least 0 from the environment. */
function number(name, fallback) {
  const text = setting(name, String(fallback));
  const value = /^\d+$/.test(text) ? Number(text) : -1;
  if (value < 0) fail(`${name} must be a whole number of at least 0, not ${JSON.stringify(text)}`);
  return value;
}

/** The bug this process is asked to have (`BUG`), or null. */
function bug() {
  const value = process.env.BUG || '';
  if (value && !BUGS.includes(value)) {
    fail(`BUG must be one of ${BUGS.join(', ')} (or empty), not ${JSON.stringify(value)}`);
  }
  return value || null;
}

/** Who this process life is, as stored beside its commits (actor, life, a random part). */
const LIFE = `${process.env.OTEL_SERVICE_NAME || PROGRAM}#${process.env.OUTBOX_INCARNATION || 0}#${Math.random().toString(36).slice(2, 10)}`;

/**
 * The tracer, configured from the standard environment, and `flush()`: await it after ending a
 * step's span so the span is exported (and answered) before the next step.
 *
 * Must be called before `pg` is first required, so that the instrumentation wraps it.
 */
function tracing(name) {
  // The standard switch: with OTEL_SDK_DISABLED=true no provider is set up and no span leaves
  // the process (the API's tracer is a no-op). `recorder run` can then read the steps from the
  // wire (outbox-system-wire.toml).
  if (String(process.env.OTEL_SDK_DISABLED || '').trim().toLowerCase() === 'true') {
    return {
      provider: { shutdown: async () => {} },
      tracer: api.trace.getTracer(name),
      flush: async () => {},
    };
  }
  setting('OTEL_EXPORTER_OTLP_ENDPOINT');
  const protocol =
    process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (protocol !== 'http/protobuf') {
    fail(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, not ${JSON.stringify(protocol)}`);
  }
  const resource = defaultResource().merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new PgInstrumentation()] });
  const tracer = provider.getTracer(name);
  const flush = async () => {
    try {
      await provider.forceFlush();
    } catch (error) {
      process.stderr.write(`${PROGRAM}: span export failed: ${error && error.message}\n`);
    }
  };
  return { provider, tracer, flush };
}

/** The `outbox.*` attributes of one event: `outbox.kind` and the given columns (null left out). */
function outbox(kind, fields = {}) {
  const attributes = { 'outbox.kind': kind };
  for (const [column, value] of Object.entries(fields)) {
    if (value === null || value === undefined) continue;
    attributes[`outbox.${column}`] = column === 'detail' ? JSON.stringify(value) : value;
  }
  return attributes;
}

/** Emits one span that is one event, ends it now and waits until it is exported. */
async function eventSpan(tracing_, name, kind, fields) {
  tracing_.tracer.startSpan(name, { attributes: outbox(kind, fields) }).end();
  await tracing_.flush();
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Errors after which the connection is gone and the outcome of a COMMIT in flight unknown. */
function connectionLost(error) {
  if (!error) return false;
  const code = String(error.code || '');
  // Class 08: connection exception; 57P01-57P03: the server shut down or is starting up.
  return (
    code.startsWith('08') ||
    code.startsWith('57P') ||
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code) ||
    /Connection terminated|not queryable|timeout|ECONNRE/i.test(String(error.message || ''))
  );
}

/**
 * One PostgreSQL connection (`DATABASE_URL`) that is opened again after the server restarts:
 * `client()` gives the open one, or connects, waiting while the server is down.
 */
class Store {
  constructor() {
    this.url = setting('DATABASE_URL');
    this.pg = need('pg');
    this.open = null;
    this.turn = Promise.resolve();
  }

  async client(stopped = () => false) {
    while (!this.open) {
      const client = new this.pg.Client({ connectionString: this.url, connectionTimeoutMillis: 2000 });
      client.on('error', () => this.drop(client));
      client.on('end', () => this.drop(client));
      try {
        await client.connect();
        this.open = client;
      } catch (error) {
        client.end().catch(() => {});
        if (!connectionLost(error)) throw error;
        if (stopped()) throw error;
        await sleep(200);
      }
    }
    return this.open;
  }

  drop(client) {
    if (this.open === client) this.open = null;
    client.end().catch(() => {});
  }

  /**
   * Runs `body(client)` in one transaction and commits; one transaction at a time per process. A
   * lost connection is thrown with `error.uncertain = true` when it broke during the COMMIT (it
   * may have committed).
   */
  transaction(body) {
    const run = this.turn.then(() => this.inTransaction(body));
    this.turn = run.catch(() => {});
    return run;
  }

  async inTransaction(body) {
    const client = await this.client();
    let committing = false;
    try {
      await client.query('BEGIN');
      const result = await body(client);
      committing = true;
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (connectionLost(error)) {
        this.drop(client);
        error.uncertain = committing;
      } else {
        await client.query('ROLLBACK').catch(() => this.drop(client));
      }
      throw error;
    }
  }

  async end() {
    if (this.open) await this.open.end().catch(() => {});
    this.open = null;
  }
}

/** A connection to NATS (`NATS_URL`) that reconnects forever after a server restart. */
async function broker(stopped = () => false) {
  const nats = need('nats');
  const servers = setting('NATS_URL');
  for (;;) {
    try {
      return await nats.connect({
        servers,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 200,
        name: process.env.OTEL_SERVICE_NAME || PROGRAM,
      });
    } catch (error) {
      if (stopped()) throw error;
      await sleep(200);
    }
  }
}

/** A flag that turns true on SIGTERM or SIGINT, so a loop can end and exit 0. */
function stopOnSignal() {
  const state = { stopped: false };
  for (const signal of ['SIGTERM', 'SIGINT']) {
    process.on(signal, () => {
      state.stopped = true;
    });
  }
  return state;
}

module.exports = {
  api,
  BUGS,
  CONSUMER,
  LIFE,
  PROGRAM,
  SCHEMA,
  STREAM,
  SUBJECT,
  Store,
  broker,
  bug,
  connectionLost,
  eventSpan,
  fail,
  need,
  number,
  outbox,
  setting,
  sleep,
  stopOnSignal,
  tracing,
};
