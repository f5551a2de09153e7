/**
 * Creates the store's schema (`DATABASE_URL`) and the broker's stream and durable consumer
 * (`NATS_URL`). Runs once after the services are ready; running it again changes nothing.
 *
 * The stream `ORDERS` (subject `orders`, file storage) keeps every copy ever published; the
 * consumer `workers` is a durable pull consumer with explicit ACKs and an ACK wait of
 * `ACK_WAIT_MS` (default 2000): a copy a worker holds unACKed that long goes to another worker.
 */

'use strict';

const { CONSUMER, SCHEMA, STREAM, SUBJECT, Store, broker, fail, need, number } = require('./common');

async function main() {
  const ackWaitMs = number('ACK_WAIT_MS', 2000);
  const store = new Store();
  const client = await store.client();
  await client.query(SCHEMA);
  await store.end();

  const { AckPolicy, DeliverPolicy, StorageType, nanos } = need('nats');
  const nc = await broker();
  const jsm = await nc.jetstreamManager();
  try {
    await jsm.streams.info(STREAM);
  } catch {
    await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], storage: StorageType.File });
  }
  try {
    await jsm.consumers.info(STREAM, CONSUMER);
  } catch {
    await jsm.consumers.add(STREAM, {
      durable_name: CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(ackWaitMs),
      max_deliver: -1,
      max_ack_pending: 1000,
    });
  }
  await nc.drain();
}

main().catch((error) => fail(`setup failed: ${error && error.message}`, 4));
