/**
 * Returns the store and the broker to their state right after setup: the store's tables and
 * sequence dropped, the stream (and its durable consumer with it) deleted, so `setup.js` creates
 * them afresh. Sessions a killed process left open are ended first: they could hold locks.
 *
 * With `[reset]` in the system file, `recorder explore` keeps one PostgreSQL and one NATS per job
 * slot between schedules and runs this, then `setup.js`, before each schedule.
 */

'use strict';

const { STREAM, Store, broker, fail } = require('./common');

const DROP = `
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
  WHERE pid <> pg_backend_pid() AND datname = current_database();
DROP TABLE IF EXISTS tasks, outbox, processed, results, counters;
DROP SEQUENCE IF EXISTS store_rev;
`;

async function main() {
  const store = new Store();
  const client = await store.client();
  await client.query(DROP);
  await store.end();

  const nc = await broker();
  const jsm = await nc.jetstreamManager();
  try {
    await jsm.streams.delete(STREAM);
  } catch (error) {
    if (!/not found/i.test(String(error && error.message))) throw error;
  }
  await nc.drain();
}

main().catch((error) => fail(`reset failed: ${error && error.message}`, 4));
