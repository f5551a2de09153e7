/**
 * The worker: takes an order from JetStream, does its work, commits the effect in PostgreSQL,
 * then ACKs it.
 *
 * One transaction holds the dedup key (`processed`, a primary key), the result, the completed
 * task and the aggregate's counter (`counters`, one row per aggregate: `counter_key` is the
 * aggregate id). It inserts the key first (`ON CONFLICT DO NOTHING`); a copy whose key is already
 * there is suppressed (no effect) and ACKed. Spans, each exported before the next step:
 *
 * - `orders receive` (`messaging.operation.type = receive`, `outbox.attempt` = JetStream's
 *   delivery count, `outbox.broker_seq` = the stream sequence): read as `delivered`, or
 *   `redelivered` when the count is above 1;
 * - `outbox commit`: `effect_committed` with `store_rev`, `amount`, `counter` and `counter_key`,
 *   or `duplicate_suppressed`;
 * - `orders ack` (`messaging.operation.type = settle`): read as `acked`; ERROR when JetStream did
 *   not confirm the ACK (the copy comes back).
 *
 * The work between receive and commit takes `WORK_MS` milliseconds (default 100). The consumer's
 * ACK wait (2 s) hands a copy held unACKed that long to another worker. While PostgreSQL is down
 * the worker keeps the copy (telling JetStream it is still working on it) and tries the commit
 * again; a commit whose reply was lost is found by its key, written by this life, and reported
 * then with the numbers stored beside the key.
 *
 * `REPORT_FOUND=0`: a commit whose reply was lost is not reported when the retry finds it (the
 * retry suppresses it as a duplicate): still correct, but the trace then lacks a commit the store
 * holds, which the analyzer can only call unknown.
 *
 * `BUG=rolled-back-span`: telemetry that lies. Each worker's first effect transaction is rolled
 * back, yet its span says committed; the copy is NAKed and comes back, and is committed then. The
 * store and the wire are right; only the spans claim one commit too many.
 *
 * `BUG=ack-before-commit`: the ACK is sent before the commit; a worker killed between the two
 * loses the order. `BUG=racy-dedup`: the key is looked up before the work, in a statement of its
 * own, and the commit inserts it without a second look: two workers holding the same copy at once
 * (one of them paused past the ACK wait) both find no key and both commit an effect.
 */

'use strict';

const common = require('./common');

const traced = common.tracing('orders-worker');
const { SpanKind, SpanStatusCode } = common.api;
const store = new common.Store();
const theBug = common.bug();
const workMs = common.number('WORK_MS', 100);
const reportFound = common.number('REPORT_FOUND', 1) !== 0;
const stop = common.stopOnSignal();
const stopped = () => stop.stopped;
/** Event id -> the store_rev of a commit this life sent without learning its outcome. */
const uncertain = new Map();
/** `BUG=rolled-back-span`: whether this life has rolled its one transaction back yet. */
let lied = false;

/** Thrown to roll an effect's transaction back; carries what it would have committed. */
class RolledBack extends Error {
  constructor(done) {
    super('rolled back');
    this.done = done;
  }
}

const messaging = (eventId) => ({
  'messaging.system': 'nats',
  'messaging.destination.name': common.SUBJECT,
  'messaging.message.id': eventId,
});

/**
 * The effect's transaction: `{rev, counter}`, or null for a duplicate. `check`: a key already
 * there means a duplicate (the correct worker); without it the key is inserted if missing and
 * the effect applied regardless. `attempt.rev` is set once the transaction has written the
 * effect, before its COMMIT.
 */
function commit(order, check, attempt, rollback = false) {
  const { event_id: eventId, task_id: taskId, aggregate_id: key, amount } = order;
  return store.transaction(async (c) => {
    const fresh = await c.query(
      `INSERT INTO processed (event_id, store_rev, counter, committed_by) VALUES ($1, 0, 0, $2)
       ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
      [eventId, common.LIFE],
    );
    if (check && fresh.rows.length === 0) {
      const { rows } = await c.query('SELECT store_rev, counter, committed_by FROM processed WHERE event_id = $1', [
        eventId,
      ]);
      // This life's own commit, whose reply it never got (the key carries its store_rev):
      // report it now.
      const row = rows[0];
      const own = row && row.committed_by === common.LIFE;
      if (reportFound && own && uncertain.get(eventId) === Number(row.store_rev)) {
        return { rev: Number(row.store_rev), counter: Number(row.counter) };
      }
      return null;
    }
    const counter = await c.query(
      `INSERT INTO counters (counter_key, value) VALUES ($1, $2)
       ON CONFLICT (counter_key) DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value`,
      [key, amount],
    );
    const value = Number(counter.rows[0].value);
    const rev = Number((await c.query("SELECT nextval('store_rev') AS n")).rows[0].n);
    attempt.rev = rev;
    await c.query('INSERT INTO results (event_id, task_id, amount) VALUES ($1, $2, $3)', [eventId, taskId, amount]);
    await c.query('UPDATE tasks SET done = true WHERE task_id = $1', [taskId]);
    if (fresh.rows.length) {
      await c.query('UPDATE processed SET store_rev = $2, counter = $3 WHERE event_id = $1', [eventId, rev, value]);
    }
    if (rollback) throw new RolledBack({ rev, counter: value });
    return { rev, counter: value };
  });
}

/**
 * `fn(attempt)`, tried again while PostgreSQL is down, keeping the copy `m` meanwhile. A COMMIT
 * that broke after the effect was written (`attempt.rev`) is remembered with its store_rev.
 */
async function retrying(m, eventId, fn) {
  for (;;) {
    const attempt = { rev: null };
    try {
      return await fn(attempt);
    } catch (error) {
      if (error.uncertain && attempt.rev !== null) uncertain.set(eventId, attempt.rev);
      if (!common.connectionLost(error) || stopped()) throw error;
      m.working();
      await common.sleep(200);
    }
  }
}

async function ack(m, eventId) {
  const span = traced.tracer.startSpan('orders ack', {
    attributes: {
      ...messaging(eventId),
      'messaging.operation.type': 'settle',
      'messaging.operation.name': 'ack',
      'outbox.broker_seq': m.seq,
    },
  });
  try {
    if (!(await m.ackAck({ timeout: 2000 }))) throw new Error('not confirmed');
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: `no ACK: ${error.message}` });
  }
  span.end();
  await traced.flush();
}

/** Receive, work, commit (or suppress), ACK: one delivery of one copy. */
async function handle(m) {
  const order = JSON.parse(Buffer.from(m.data).toString('utf8'));
  const eventId = order.event_id;
  traced.tracer
    .startSpan('orders receive', {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...messaging(eventId),
        'messaging.operation.type': 'receive',
        'outbox.task_id': order.task_id,
        'outbox.attempt': m.info.deliveryCount,
        'outbox.broker_seq': m.seq,
      },
    })
    .end();
  await traced.flush();
  if (theBug === 'ack-before-commit') await ack(m, eventId);
  let done;
  const seen = async () => {
    const { rows } = await (await store.client()).query('SELECT 1 FROM processed WHERE event_id = $1', [eventId]);
    return rows.length > 0;
  };
  if (theBug === 'rolled-back-span' && !lied) {
    lied = true;
    await common.sleep(workMs);
    const claimed = await commit(order, true, { rev: null }, true).catch((error) => {
      if (error instanceof RolledBack) return error.done;
      throw error;
    });
    if (claimed !== null) {
      await common.eventSpan(traced, 'outbox commit', 'effect_committed', {
        event_id: eventId,
        task_id: order.task_id,
        amount: order.amount,
        counter: claimed.counter,
        counter_key: order.aggregate_id,
        store_rev: claimed.rev,
      });
    }
    m.nak();
    return;
  }
  if (theBug === 'racy-dedup' && (await retrying(m, eventId, seen))) {
    done = null;
  } else {
    await common.sleep(workMs);
    done = await retrying(m, eventId, (attempt) => commit(order, theBug !== 'racy-dedup', attempt));
  }
  uncertain.delete(eventId);
  if (done === null) {
    await common.eventSpan(traced, 'outbox commit', 'duplicate_suppressed', {
      event_id: eventId,
      task_id: order.task_id,
    });
  } else {
    await common.eventSpan(traced, 'outbox commit', 'effect_committed', {
      event_id: eventId,
      task_id: order.task_id,
      amount: order.amount,
      counter: done.counter,
      counter_key: order.aggregate_id,
      store_rev: done.rev,
    });
  }
  if (theBug !== 'ack-before-commit') await ack(m, eventId);
}

async function main() {
  const nc = await common.broker(stopped);
  const js = nc.jetstream();
  let consumer = null;
  while (!stopped()) {
    let m = null;
    try {
      consumer = consumer || (await js.consumers.get(common.STREAM, common.CONSUMER));
      m = await consumer.next({ expires: 1000 });
    } catch {
      consumer = null;
      await common.sleep(200);
      continue;
    }
    if (m) {
      try {
        await handle(m);
      } catch (error) {
        if (!common.connectionLost(error)) throw error;
      }
    }
  }
  await nc.close().catch(() => {});
  await store.end();
  await traced.provider.shutdown().catch(() => {});
  process.exit(0);
}

main().catch((error) => common.fail(`stopped: ${error && error.stack}`, 1));
