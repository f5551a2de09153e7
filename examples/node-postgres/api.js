/**
 * The API: `POST /tasks` commits the task and its outbox row in one PostgreSQL transaction.
 *
 * Body: `{"task_id": "...", "aggregate_id": "...", "amount": N}`. Answers 201 with the event id
 * for a new task, 200 with the first event id for a task id it already has (nothing changes),
 * 400 for a body it cannot read, 503 when the store stayed down (nothing committed, or the
 * commit's outcome unknown: the client sends the task again). Serves on 127.0.0.1:`PORT`.
 *
 * The outbox row's `aggregate_seq` is the next number of its aggregate, taken under a
 * transaction-scoped advisory lock on the aggregate, so an aggregate's rows commit in their order.
 *
 * After the commit the request's span gets two span events, `task_accepted` and
 * `intent_recorded`, both with `outbox.task_id`, `outbox.event_id` and the commit's
 * `outbox.store_rev` (equal numbers: one atomic transaction). The span ends, and its export is
 * awaited, before the answer is sent.
 *
 * A commit whose reply was lost (PostgreSQL killed meanwhile) may have happened: the task is
 * tried again, and if the row is there, written by this very process life, its two events are
 * reported then, with the numbers stored in the row.
 */

'use strict';

const crypto = require('crypto');
const http = require('http');

const common = require('./common');

const traced = common.tracing('orders-api');
const { SpanKind, SpanStatusCode } = common.api;
const store = new common.Store();
/** Task id -> the store_rev of a commit this life sent without learning its outcome. */
const uncertain = new Map();

/**
 * Commits the task and its outbox row, or finds the row a former request committed.
 * `attempt.rev` is set once the rows are written, before the COMMIT.
 */
function create(taskId, aggregateId, amount, attempt) {
  return store.transaction(async (c) => {
    const found = await c.query(
      'SELECT event_id, aggregate_id, aggregate_seq, store_rev, created_by FROM outbox WHERE task_id = $1',
      [taskId],
    );
    if (found.rows.length) {
      const row = found.rows[0];
      return {
        eventId: row.event_id,
        aggregateId: row.aggregate_id,
        aggregateSeq: row.aggregate_seq,
        rev: Number(row.store_rev),
        mine: row.created_by === common.LIFE && uncertain.get(taskId) === Number(row.store_rev),
        created: false,
      };
    }
    await c.query('SELECT pg_advisory_xact_lock(1, hashtext($1))', [aggregateId]);
    const seq = await c.query(
      'SELECT COALESCE(MAX(aggregate_seq), 0) + 1 AS n FROM outbox WHERE aggregate_id = $1',
      [aggregateId],
    );
    const aggregateSeq = Number(seq.rows[0].n);
    const rev = Number((await c.query("SELECT nextval('store_rev') AS n")).rows[0].n);
    const eventId = `evt-${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
    await c.query('INSERT INTO tasks (task_id, aggregate_id, amount) VALUES ($1, $2, $3)', [
      taskId,
      aggregateId,
      amount,
    ]);
    await c.query(
      `INSERT INTO outbox (event_id, task_id, aggregate_id, aggregate_seq, amount, store_rev, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [eventId, taskId, aggregateId, aggregateSeq, amount, rev, common.LIFE],
    );
    attempt.rev = rev;
    return { eventId, aggregateId, aggregateSeq, rev, mine: true, created: true };
  });
}

/** `create`, tried again for up to 10 s while the store is down. */
async function createRetrying(taskId, aggregateId, amount) {
  const until = Date.now() + 10_000;
  for (;;) {
    const attempt = { rev: null };
    try {
      return await create(taskId, aggregateId, amount, attempt);
    } catch (error) {
      if (error.uncertain && attempt.rev !== null) uncertain.set(taskId, attempt.rev);
      if (!common.connectionLost(error) || Date.now() > until) throw error;
      await common.sleep(200);
    }
  }
}

function readTask(text) {
  try {
    const body = JSON.parse(text);
    const taskId = String(body.task_id ?? '');
    const amount = Number(body.amount);
    const aggregateId = String(body.aggregate_id || taskId);
    if (!taskId || !Number.isInteger(amount)) return null;
    return { taskId, amount, aggregateId };
  } catch {
    return null;
  }
}

async function handle(task) {
  // The span itself carries no `outbox.*` attribute: one that did, with no kind on it or its
  // events, would be refused (a request that reports no step, such as a replay, says nothing).
  const span = traced.tracer.startSpan('POST /tasks', { kind: SpanKind.SERVER });
  let status;
  let body;
  try {
    const done = await createRetrying(task.taskId, task.aggregateId, task.amount);
    // A new row, or one this life committed without learning it: report the commit.
    if (done.created || done.mine) {
      uncertain.delete(task.taskId);
      const ids = { task_id: task.taskId, event_id: done.eventId };
      span.addEvent(
        'task_accepted',
        common.outbox('task_accepted', { ...ids, store_rev: done.rev }),
      );
      span.addEvent(
        'intent_recorded',
        common.outbox('intent_recorded', {
          ...ids,
          store_rev: done.rev,
          aggregate_id: done.aggregateId,
          aggregate_seq: done.aggregateSeq,
        }),
      );
    }
    status = done.created ? 201 : 200;
    body = { task_id: task.taskId, event_id: done.eventId };
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: `store: ${error.message}` });
    status = 503;
    body = { error: `store: ${error.message}` };
  }
  span.end();
  await traced.flush();
  return { status, body };
}

function main() {
  const port = common.setting('PORT');
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    common.fail(`PORT must be a TCP port (1-65535), not ${JSON.stringify(port)}`);
  }
  const server = http.createServer((req, res) => {
    const answer = (status, body) => {
      const data = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) });
      res.end(data);
    };
    if (req.method !== 'POST' || req.url !== '/tasks') {
      answer(404, { error: 'no such path' });
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const task = readTask(Buffer.concat(chunks).toString('utf8'));
      if (!task) {
        answer(400, { error: 'expected {task_id, amount, aggregate_id}' });
        return;
      }
      handle(task).then(({ status, body }) => answer(status, body));
    });
  });
  server.on('error', (error) => common.fail(`cannot serve on 127.0.0.1:${port}: ${error.message}`));
  server.listen(Number(port), '127.0.0.1', () => console.log(`listening on 127.0.0.1:${port}`));
  const stop = async () => {
    server.close();
    await store.end();
    await traced.provider.shutdown().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
