#!/usr/bin/env node
// Consumer benchmark:
//   npm run bench:consumer [-- --tasks 10000 --spawns 1000 --retries 2000 --ledger async]
// (defaults; far fewer tasks mostly measure warm-up: JIT, connections, statement preparation)
// Its own database and RabbitMQ vhost; one consumer with prefetch 1 and the
// real run ledger. Prints no-op tasks/s (in-process executor), spawned
// /bin/true workers/s, and the time one retry adds to a task.
// --ledger async   the default: ledger marks commit without waiting for the flush
// --ledger durable CRON_LEDGER_DURABLE_COMMIT=true: every mark waits for fsync
// --ledger off     no execution id in the messages: broker and consumer cost, and
//                  the one query that checks the message's scheduler exists
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {parseArgs} = require('node:util');
const {createBenchEnvironment} = require('./bench-environment');
const amqp = require('amqplib');
const {createPool} = require('../../dist/database/pg-pool');
const {AmqpConnection} = require('../../dist/queue/amqp-connection');
const {
  assertTopology,
  brokerTopology,
  TASK_QUEUE,
} = require('../../dist/queue/topology');
const {TaskConsumer} = require('../../dist/consumer/task-consumer');
const {Metrics} = require('../../dist/metrics/metrics');
const {createLedgerPool, RunLedger} = require('../../dist/consumer/run-ledger');
const {WorkerExecutor} = require('../../dist/executors/worker.executor');

const {values} = parseArgs({
  options: {
    tasks: {type: 'string', default: '10000'},
    spawns: {type: 'string', default: '1000'},
    retries: {type: 'string', default: '2000'},
    ledger: {type: 'string', default: 'async'},
    // durable: start marks of unpublished runs flushed, as the service does.
    'start-mark': {type: 'string', default: 'durable'},
    // on: record the consumer's metrics as the service does; off: without.
    metrics: {type: 'string', default: 'on'},
  },
});
if (!['on', 'off'].includes(values.metrics)) {
  process.stderr.write('--metrics must be on or off\n');
  process.exit(2);
}
// Retry 1 waits 1 ms: the measured overhead is the consumer's, not the TTL.
// AMQP_QUEUE_TYPE=classic measures classic queues; quorum is the default.
const retry = {
  retryDelayMs: 1,
  multiplier: 1,
  maxRetries: 1,
  queueType: process.env.AMQP_QUEUE_TYPE === 'classic' ? 'classic' : 'quorum',
};
const LEDGER_MODES = ['async', 'durable', 'off'];
if (!LEDGER_MODES.includes(values.ledger)) {
  process.stderr.write(`--ledger must be one of ${LEDGER_MODES.join(', ')}\n`);
  process.exit(2);
}
const withLedger = values.ledger !== 'off';

async function publishAll(count, type, schedulerId, pool, amqpUrl) {
  const {rows} = await pool.query(
    `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
     SELECT $1, $2 || n, 'bench', 'published', now() FROM generate_series(1, $3::int) n RETURNING id`,
    [schedulerId, `bench-${type}-${Date.now()}-`, count],
  );
  const connection = await amqp.connect(amqpUrl);
  const channel = await connection.createConfirmChannel();
  for (const row of rows) {
    const body = {
      type,
      id: 1,
      scheduler_id: schedulerId,
      params_scheduler: '{}',
    };
    channel.sendToQueue(TASK_QUEUE, Buffer.from(JSON.stringify(body)), {
      persistent: true,
      // Without the execution id the run ledger is skipped: only the
      // scheduler is checked (a deleted one's message does not run).
      headers: withLedger
        ? {'x-execution-id': Number(row.id), 'x-execution-key': 'bench'}
        : {},
    });
  }
  await channel.waitForConfirms();
  await connection.close();
  return rows.map(row => Number(row.id));
}

let handled = 0;

/** Publishes `count` tasks and times them until all are handled (publishing included). */
async function timeTasks(pool, amqpUrl, count, type, schedulerId) {
  const started = process.hrtime.bigint();
  const target = handled + count;
  const ids = await publishAll(count, type, schedulerId, pool, amqpUrl);
  // Count in-process (polling the database would compete for the CPU), then
  // wait for the last ledger marks, which follow each executor's return.
  while (handled < target) await new Promise(resolve => setTimeout(resolve, 2));
  while (withLedger) {
    const {rows} = await pool.query(
      `SELECT count(*)::int AS n FROM scheduler_execution WHERE id = ANY($1) AND status = 'succeeded'`,
      [ids],
    );
    if (rows[0].n === ids.length) break;
    await new Promise(resolve => setTimeout(resolve, 2));
  }
  return Number(process.hrtime.bigint() - started) / 1e6;
}

function countingWorker(executor) {
  return {
    execute: async context => {
      await executor.execute(context);
      handled++;
    },
  };
}

async function main() {
  const env = await createBenchEnvironment();
  const {config, databaseUrl, amqpUrl, logger} = env;
  const workersDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-workers-'));
  fs.copyFileSync('/bin/true', path.join(workersDir, 'true'));
  fs.chmodSync(path.join(workersDir, 'true'), 0o755);
  const pool = createPool(databaseUrl, logger, 5);
  const ledgerPool = createLedgerPool(
    databaseUrl,
    logger,
    values.ledger === 'durable',
  );
  const connection = new AmqpConnection(amqpUrl, logger, {
    onConnect: c =>
      assertTopology(() => c.createChannel(), brokerTopology(retry)),
  });
  const failedOnce = new Set();
  const consumer = new TaskConsumer({
    connection,
    metrics:
      values.metrics === 'on'
        ? new Metrics(new Set(['consumer']), {version: 'bench'})
        : undefined,
    ledger: new RunLedger(
      ledgerPool,
      values['start-mark'] === 'async' ? ledgerPool : pool,
    ),
    executors: {
      reminder: {
        execute: async () => {
          handled++;
        },
      },
      report: {
        execute: async context => {
          const key = context.message.scheduler_id + ':' + context.attempt;
          if (context.attempt === 1 && !failedOnce.has(key))
            throw new Error('fail once');
          handled++;
        },
      },
      worker: countingWorker(
        new WorkerExecutor(pool, {
          workersDir,
          defaultTimeoutMs: 10_000,
          killGraceMs: 500,
          env: config.childEnv,
          outputMaxBytes: config.taskOutputMaxBytes,
        }),
      ),
    },
    retry,
    prefetch: 1,
    logger,
  });
  try {
    await pool.query(
      `INSERT INTO report (name, controller) VALUES ('b', 'Bench')`,
    );
    await pool.query(
      `INSERT INTO worker (name, command) VALUES ('true', 'true')`,
    );
    const {rows} = await pool.query(
      `INSERT INTO scheduler (description, schedule, report_id) VALUES ('bench', '* * * * *', 1) RETURNING id`,
    );
    const schedulerId = rows[0].id;
    await connection.start();
    await consumer.start();

    const tasks = Number(values.tasks);
    const noopMs = await timeTasks(
      pool,
      amqpUrl,
      tasks,
      'reminder',
      schedulerId,
    );
    const spawns = Number(values.spawns);
    const spawnMs = await timeTasks(
      pool,
      amqpUrl,
      spawns,
      'worker',
      schedulerId,
    );
    const retries = Number(values.retries);
    const retryMs = await timeTasks(
      pool,
      amqpUrl,
      retries,
      'report',
      schedulerId,
    );

    const perNoop = noopMs / tasks;
    const perRetried = retryMs / retries;
    const results = {
      ledger: values.ledger,
      metrics: values.metrics,
      start_mark: values['start-mark'],
      machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
      noop_tasks: tasks,
      noop_tasks_per_s: Math.round(tasks / (noopMs / 1000)),
      spawned_workers: spawns,
      spawned_workers_per_s: Math.round(spawns / (spawnMs / 1000)),
      retried_tasks: retries,
      ms_per_task_without_retry: perNoop.toFixed(2),
      ms_per_task_with_one_retry: perRetried.toFixed(2),
      retry_overhead_ms: (perRetried - perNoop).toFixed(2),
    };
    for (const [key, value] of Object.entries(results)) {
      process.stdout.write(`${key.padEnd(28)} ${value}\n`);
    }
  } finally {
    await consumer.stop(1000);
    await connection.stop();
    await pool.end();
    await ledgerPool.end();
    fs.rmSync(workersDir, {recursive: true, force: true});
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
