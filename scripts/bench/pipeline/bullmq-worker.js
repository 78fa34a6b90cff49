#!/usr/bin/env node
'use strict';
// One BullMQ worker process running no-op jobs, CONCURRENCY at a time (the
// issue's comparison: 1). Usage: bullmq-worker.js REDIS_PORT QUEUE_NAME [CONCURRENCY]
const {Worker} = require('bullmq');

const [port, queueName, concurrency = '1'] = process.argv.slice(2);
const worker = new Worker(queueName, async () => undefined, {
  connection: {host: '127.0.0.1', port: Number(port)},
  concurrency: Number(concurrency),
});
let errors = 0;
worker.on('error', error => {
  process.stderr.write(`bullmq worker: ${error.message}\n`);
  // A broken setup repeats its error for ever: stop instead.
  if (++errors > 10) process.exit(1);
});
worker.waitUntilReady().then(
  () => process.stdout.write('ready\n'),
  () => process.exit(1),
);
process.once('SIGTERM', () => {
  setTimeout(() => process.exit(0), 5000).unref();
  worker.close().finally(() => process.exit(0));
});
