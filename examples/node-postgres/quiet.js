/**
 * Exits 0 when nothing is left to move, 1 otherwise (and says what is left, on one line).
 *
 * Nothing left: no outbox row waits for its publish, and the workers' consumer has no copy left
 * to deliver and none delivered but unACKed. Tasks that are not done are not asked about: when
 * nothing moves they never will be (a lost order is the analyzer's `no-lost-task` to judge).
 */

'use strict';

const { CONSUMER, STREAM, Store, need, setting } = require('./common');

async function left() {
  const store = new Store();
  const client = new store.pg.Client({ connectionString: store.url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
  } catch {
    return ['postgres=down'];
  }
  let counts;
  try {
    const { rows } = await client.query(
      'SELECT (SELECT count(*) FROM outbox WHERE NOT published)::int AS outbox_pending',
    );
    counts = rows[0];
  } finally {
    await client.end().catch(() => {});
  }
  const nats = need('nats');
  let nc;
  try {
    nc = await nats.connect({ servers: setting('NATS_URL'), maxReconnectAttempts: 0, timeout: 2000 });
  } catch {
    return ['nats=down'];
  }
  try {
    const info = await (await nc.jetstreamManager()).consumers.info(STREAM, CONSUMER);
    counts.undelivered = info.num_pending;
    counts.unacked = info.num_ack_pending;
  } finally {
    await nc.close();
  }
  return Object.entries(counts)
    .filter(([, n]) => n)
    .map(([name, n]) => `${name}=${n}`);
}

left().then(
  (still) => {
    if (still.length) {
      console.log(`moving: ${still.join(' ')}`);
      process.exit(1);
    }
  },
  (error) => {
    console.log(`moving: unknown (${error && error.message})`);
    process.exit(1);
  },
);
