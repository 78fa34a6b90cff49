#!/usr/bin/env node
'use strict';
// One of the floor's consumer processes: CHANNELS channels with prefetch 1
// that only ack, as a service worker's consumer channels with no task. Prints
// `ready`, then, every 100 ms while deliveries arrive, one JSON line with how
// many it has received and the epoch ms of its first and last delivery (the
// bench sums the processes' counts). Usage: floor-consumer.js AMQP_URL CHANNELS
const amqp = require('amqplib');
const {TASK_QUEUE} = require('../../../dist/queue/topology');
const {
  amqpSocketOf,
  coalesceTurnWrites,
} = require('../../../dist/queue/turn-writes');

const REPORT_EVERY_MS = 100;

async function main() {
  const [url, channels] = process.argv.slice(2);
  const connection = await amqp.connect(url, {noDelay: true});
  coalesceTurnWrites(amqpSocketOf(connection));
  let received = 0;
  let reported = 0;
  let first;
  let last;
  for (let i = 0; i < Number(channels); i++) {
    const channel = await connection.createChannel();
    await channel.prefetch(1);
    await channel.consume(TASK_QUEUE, message => {
      last = Date.now();
      first ??= last;
      received++;
      channel.ack(message);
    });
  }
  setInterval(() => {
    if (received === reported) return;
    reported = received;
    process.stdout.write(`${JSON.stringify({received, first, last})}\n`);
  }, REPORT_EVERY_MS);
  process.stdout.write('ready\n');
  process.once('SIGTERM', () =>
    connection.close().finally(() => process.exit(0)),
  );
}

main().catch(error => {
  process.stderr.write(`floor consumer: ${error.stack}\n`);
  process.exit(1);
});
