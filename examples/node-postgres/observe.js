/**
 * Prints the ground truth read back from PostgreSQL and JetStream: one JSON object on one line.
 *
 * Its keys are those of the trace's `observed` row: tasks, tasks_done, results, dedup_keys,
 * counter (an object: one counter per aggregate, by its key), outbox_pending, outbox_published,
 * stream_messages.
 */

'use strict';

const { STREAM, Store, fail, need, setting } = require('./common');

async function main() {
  const store = new Store();
  const client = new store.pg.Client({ connectionString: store.url, connectionTimeoutMillis: 5000 });
  await client.connect();
  let observed;
  try {
    const { rows } = await client.query(
      `SELECT (SELECT count(*) FROM tasks)::int AS tasks,
              (SELECT count(*) FROM tasks WHERE done)::int AS tasks_done,
              (SELECT count(*) FROM results)::int AS results,
              (SELECT count(*) FROM processed)::int AS dedup_keys,
              (SELECT count(*) FROM outbox WHERE NOT published)::int AS outbox_pending,
              (SELECT count(*) FROM outbox WHERE published)::int AS outbox_published`,
    );
    observed = rows[0];
    const counters = await client.query('SELECT counter_key, value::text FROM counters ORDER BY counter_key');
    observed.counter = Object.fromEntries(counters.rows.map((r) => [r.counter_key, Number(r.value)]));
  } finally {
    await client.end().catch(() => {});
  }
  const nats = need('nats');
  const nc = await nats.connect({ servers: setting('NATS_URL'), maxReconnectAttempts: 0, timeout: 5000 });
  try {
    const info = await (await nc.jetstreamManager()).streams.info(STREAM);
    observed.stream_messages = info.state.messages;
  } finally {
    await nc.close();
  }
  const sorted = Object.fromEntries(Object.keys(observed).sort().map((k) => [k, observed[k]]));
  console.log(JSON.stringify(sorted));
}

main().catch((error) => fail(`cannot read the stores back: ${error && error.message}`, 1));
