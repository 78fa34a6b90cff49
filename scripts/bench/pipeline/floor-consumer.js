#!/usr/bin/env node
'use strict';
// The floor's consumer: C channels with prefetch 1 that only ack. Prints one
// JSON line with the epoch ms of the first and last delivery once it has
// received `count` messages. Usage: floor-consumer.js AMQP_URL COUNT CHANNELS
const amqp = require('amqplib');
const {TASK_QUEUE} = require('../../../dist/queue/topology');
const {
  amqpSocketOf,
  coalesceTurnWrites,
} = require('../../../dist/queue/turn-writes');

async function main() {
  const [url, count, channels] = process.argv.slice(2);
  const connection = await amqp.connect(url, {noDelay: true});
  coalesceTurnWrites(amqpSocketOf(connection));
  let received = 0;
  let first;
  for (let i = 0; i < Number(channels); i++) {
    const channel = await connection.createChannel();
    await channel.prefetch(1);
    await channel.consume(TASK_QUEUE, message => {
      const now = Date.now();
      first ??= now;
      channel.ack(message);
      if (++received === Number(count)) {
        process.stdout.write(`${JSON.stringify({first, last: now})}\n`);
      }
    });
  }
  process.stdout.write('ready\n');
  process.once('SIGTERM', () =>
    connection.close().finally(() => process.exit(0)),
  );
}

main().catch(error => {
  process.stderr.write(`floor consumer: ${error.stack}\n`);
  process.exit(1);
});
