/**
 * The relay: publishes pending outbox rows to JetStream, aggregate by aggregate, each aggregate's
 * rows in `aggregate_seq` order, and marks each row after its publish ACK.
 *
 * Two relays run. Each claims whole aggregates with a session-level advisory lock
 * (`pg_try_advisory_lock(2, hashtext(aggregate_id))`) on its connection, reads the aggregate's
 * pending rows in order, and publishes and marks them one by one; another relay skips a claimed
 * aggregate. (`FOR UPDATE SKIP LOCKED` on single rows would let the other relay take an
 * aggregate's next row while this one still publishes its first.) A killed relay's connection
 * closes and PostgreSQL drops its locks; a relay whose connection broke gives its pass up.
 *
 * The publish awaits JetStream's ACK and does not rely on `Nats-Msg-Id` (no broker-side dedup:
 * the workers' dedup key absorbs copies). Its span follows the OpenTelemetry messaging
 * conventions (`messaging.operation.type = send`) and has no `outbox.kind`: its start reads as
 * `publish_attempt`, its end as `publish_acked` with `outbox.broker_seq` = the stream sequence,
 * or `publish_unacked` when its status is ERROR (no ACK: the copy may or may not be stored). The
 * mark is a span of its own, `outbox.kind = outbox_marked` with the commit's `store_rev`.
 *
 * `BUG=mark-before-ack`: the row is marked before it is published; a relay killed between the
 * two leaves a row marked and never published.
 *
 * `BUG=mark-on-timeout`: a publish that raised (no ACK within its timeout) is taken as sent and
 * the row is marked. When the publish never reached NATS the event is lost for good: no kill
 * shows it; a request lost on the wire does (`drop requests relay nats after publish_attempt`).
 */

'use strict';

const common = require('./common');

const traced = common.tracing('orders-relay');
const { SpanKind, SpanStatusCode } = common.api;
const store = new common.Store();
const theBug = common.bug();
const stop = common.stopOnSignal();
const stopped = () => stop.stopped;
/** Publish attempts per event id, in this life. */
const attempts = new Map();

class ClaimLost extends Error {}

/** Publishes one copy of `row`; returns its stream sequence, or null without an ACK. */
async function publish(js, row) {
  const attempt = (attempts.get(row.event_id) || 0) + 1;
  attempts.set(row.event_id, attempt);
  const span = traced.tracer.startSpan('orders publish', {
    kind: SpanKind.PRODUCER,
    attributes: {
      'messaging.system': 'nats',
      'messaging.destination.name': common.SUBJECT,
      'messaging.operation.type': 'send',
      'messaging.message.id': row.event_id,
      'outbox.attempt': attempt,
      'outbox.task_id': row.task_id,
      'outbox.aggregate_id': row.aggregate_id,
      'outbox.aggregate_seq': row.aggregate_seq,
    },
  });
  const body = JSON.stringify({
    event_id: row.event_id,
    task_id: row.task_id,
    aggregate_id: row.aggregate_id,
    amount: row.amount,
  });
  let seq = null;
  try {
    const ack = await js.publish(common.SUBJECT, Buffer.from(body), { timeout: 2000 });
    seq = ack.seq;
    span.setAttribute('outbox.broker_seq', seq);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: `no publish ACK: ${error.message}` });
  }
  span.end();
  await traced.flush();
  return seq;
}

/** Publishes until JetStream ACKs, while this relay still holds its claim. */
async function publishAcked(js, claim, row) {
  while (!stopped()) {
    if (store.open !== claim) throw new ClaimLost();
    if ((await publish(js, row)) !== null) return true;
    if (theBug === 'mark-on-timeout') return true;
    await common.sleep(200);
  }
  return false;
}

/** Marks the row published in its own transaction and reports it. */
async function mark(claim, eventId) {
  if (store.open !== claim) throw new ClaimLost();
  const rev = await store.transaction(async (c) => {
    await c.query('UPDATE outbox SET published = true WHERE event_id = $1', [eventId]);
    return Number((await c.query("SELECT nextval('store_rev') AS n")).rows[0].n);
  });
  await common.eventSpan(traced, 'outbox mark', 'outbox_marked', { event_id: eventId, store_rev: rev });
}

/** Publishes and marks the pending rows of one claimed aggregate, in order. */
async function drain(js, claim, aggregateId) {
  const { rows } = await claim.query(
    `SELECT event_id, task_id, aggregate_id, aggregate_seq, amount FROM outbox
     WHERE aggregate_id = $1 AND NOT published ORDER BY aggregate_seq`,
    [aggregateId],
  );
  for (const row of rows) {
    if (stopped()) return;
    if (theBug === 'mark-before-ack') {
      await mark(claim, row.event_id);
      if (!(await publishAcked(js, claim, row))) return;
    } else {
      if (!(await publishAcked(js, claim, row))) return;
      await mark(claim, row.event_id);
    }
  }
}

/** One pass over the aggregates with pending rows; returns whether there were any. */
async function pass(js) {
  const claim = await store.client(stopped);
  const { rows } = await claim.query(
    'SELECT aggregate_id FROM outbox WHERE NOT published GROUP BY aggregate_id ORDER BY min(id)',
  );
  for (const { aggregate_id: aggregateId } of rows) {
    if (stopped()) break;
    const lock = await claim.query('SELECT pg_try_advisory_lock(2, hashtext($1)) AS got', [aggregateId]);
    if (!lock.rows[0].got) continue;
    try {
      await drain(js, claim, aggregateId);
    } finally {
      if (store.open === claim) {
        await claim.query('SELECT pg_advisory_unlock(2, hashtext($1))', [aggregateId]).catch(() => {});
      }
    }
  }
  return rows.length > 0;
}

async function main() {
  const nc = await common.broker(stopped);
  const js = nc.jetstream();
  while (!stopped()) {
    try {
      if (!(await pass(js))) await common.sleep(20);
    } catch (error) {
      if (!(error instanceof ClaimLost) && !common.connectionLost(error)) throw error;
      await common.sleep(200);
    }
  }
  await nc.close().catch(() => {});
  await store.end();
  await traced.provider.shutdown().catch(() => {});
  process.exit(0);
}

main().catch((error) => common.fail(`stopped: ${error && error.stack}`, 1));
