#!/usr/bin/env node
// Per-task budget of the consumer: node scripts/bench/task-budget.js [--tasks 3000]
// One real TaskConsumer (one channel, prefetch 1, the real run ledger, the
// real ReminderExecutor with one recipient, info logs written synchronously
// as the console transport does) on its own database and vhost. Each step of
// each task is timed in process, and the averages printed in milliseconds:
// delivery → checks, ledger start mark (when the consumer makes one), log →
// task → ledger finish mark (when separate) → log, ack and the next delivery.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const {Writable} = require('node:stream');
const {parseArgs} = require('node:util');
const amqp = require('amqplib');
const winston = require('winston');
const {createBenchEnvironment} = require('./bench-environment');
const {createPool} = require('../../dist/database/pg-pool');
const {createLogger} = require('../../dist/logging/logger');
const {AmqpConnection} = require('../../dist/queue/amqp-connection');
const {
  assertTopology,
  brokerTopology,
  retrySettings,
  TASK_QUEUE,
} = require('../../dist/queue/topology');
const {TaskConsumer} = require('../../dist/consumer/task-consumer');
const {createLedgerPool, RunLedger} = require('../../dist/consumer/run-ledger');
const {ReminderExecutor} = require('../../dist/executors/reminder.executor');
const {Metrics} = require('../../dist/metrics/metrics');

const {values} = parseArgs({
  options: {tasks: {type: 'string', default: '3000'}},
});
const tasks = Number(values.tasks);
if (!Number.isInteger(tasks) || tasks < 100) {
  process.stderr.write('--tasks must be an integer of at least 100\n');
  process.exit(2);
}

const now = () => performance.now();
const marks = [];
let current;

/** Wraps `object[method]` to record in `current` when each call begins and ends. */
function timed(object, method, begin, end) {
  const original = object[method].bind(object);
  object[method] = async (...args) => {
    if (begin === 'deliver') {
      current = {deliver: now()};
      marks.push(current);
    }
    const mark = current;
    mark[begin] ??= now();
    try {
      return await original(...args);
    } finally {
      mark[end] = now();
    }
  };
}

async function main() {
  const env = await createBenchEnvironment();
  const devNull = fs.openSync('/dev/null', 'w');
  // Synchronous writes, as the console transport's stdout pipe is on Linux.
  const logger = createLogger({
    level: 'info',
    service: 'bench',
    transports: [
      new winston.transports.Stream({
        stream: new Writable({
          write(chunk, _encoding, done) {
            fs.writeSync(devNull, chunk);
            done();
          },
        }),
      }),
    ],
  });
  const pool = createPool(env.databaseUrl, logger, 5);
  const ledgerPool = createLedgerPool(env.databaseUrl, logger, false);
  const settings = retrySettings(env.config);
  const connection = new AmqpConnection(env.amqpUrl, logger, {
    onConnect: c =>
      assertTopology(() => c.createChannel(), brokerTopology(settings)),
  });
  const ledger = new RunLedger(ledgerPool, pool);
  const reminder = new ReminderExecutor(pool);
  const consumer = new TaskConsumer({
    connection,
    ledger,
    executors: {reminder, worker: reminder, report: reminder},
    retry: settings,
    prefetch: 1,
    logger,
    metrics: new Metrics(new Set(['consumer']), {version: 'bench'}),
  });
  // One delivery at a time (one channel, prefetch 1): each handle() is one task.
  timed(consumer, 'handle', 'deliver', 'handled');
  timed(ledger, 'start', 'start_begin', 'start_end');
  timed(reminder, 'execute', 'task_begin', 'task_end');
  timed(ledger, 'finished', 'finish_begin', 'finish_end');
  try {
    const {rows: user} = await pool.query(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('bench@example.com', 'bench', 'x', 'viewer') RETURNING id`,
    );
    await pool.query(
      `INSERT INTO reminder (message, user_ids) VALUES ('bench', $1::jsonb)`,
      [JSON.stringify([user[0].id])],
    );
    const {rows: scheduler} = await pool.query(
      `INSERT INTO scheduler (description, schedule, reminder_id) VALUES ('budget', '* * * * *', 1) RETURNING id`,
    );
    const {rows} = await pool.query(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       SELECT $1, 'budget-' || n, 'bench', 'published', now() FROM generate_series(1, $2::int) n RETURNING id`,
      [scheduler[0].id, tasks],
    );
    // The backlog is queued before the consumer starts: deliveries, not publishes, are timed.
    const publisher = await amqp.connect(env.amqpUrl);
    const channel = await publisher.createConfirmChannel();
    await assertTopology(
      () => publisher.createChannel(),
      brokerTopology(settings),
    );
    for (const row of rows) {
      channel.sendToQueue(
        TASK_QUEUE,
        Buffer.from(
          JSON.stringify({
            type: 'reminder',
            id: 1,
            scheduler_id: scheduler[0].id,
            params_scheduler: '{}',
          }),
        ),
        {
          persistent: true,
          headers: {
            'x-execution-id': Number(row.id),
            'x-execution-key': 'budget',
          },
        },
      );
    }
    await channel.waitForConfirms();
    await publisher.close();
    await connection.start();
    const began = now();
    await consumer.start();
    while (marks.length < tasks || !marks[tasks - 1].handled) {
      await new Promise(resolve => setTimeout(resolve, 20));
    }
    const elapsed = now() - began;
    // The first 10 % warm up (JIT, statement preparation).
    const first = Math.floor(tasks / 10);
    const steady = marks.slice(first, tasks - 1);
    const mean = pick =>
      steady.reduce((s, m, i) => s + pick(m, marks[first + i + 1]), 0) /
      steady.length;
    const afterTask = m => m.finish_end ?? m.task_end;
    const budget = {
      'delivery: parse, checks, logger': mean(
        m => (m.start_begin ?? m.task_begin) - m.deliver,
      ),
      'ledger start mark (its own statement)': mean(m =>
        m.start_begin === undefined ? 0 : m.start_end - m.start_begin,
      ),
      "'Task started' log, metrics, set-up": mean(
        m => m.task_begin - (m.start_end ?? m.task_begin),
      ),
      'task: the reminder statement (with the marks it carries)': mean(
        m => m.task_end - m.task_begin,
      ),
      'ledger finish mark (its own statement)': mean(m =>
        m.finish_begin === undefined ? 0 : m.finish_end - m.finish_begin,
      ),
      "'Task succeeded' log, ack, the broker's next delivery": mean(
        (m, next) => next.deliver - afterTask(m),
      ),
    };
    const total = Object.values(budget).reduce((a, b) => a + b, 0);
    process.stdout.write(
      `${JSON.stringify(
        {
          tasks,
          tasks_per_s: Math.round(tasks / (elapsed / 1000)),
          separate_start_mark: steady.some(m => m.start_begin !== undefined),
          separate_finish_mark: steady.some(m => m.finish_begin !== undefined),
          ms_per_task: +total.toFixed(3),
          budget_ms: Object.fromEntries(
            Object.entries(budget).map(([k, v]) => [k, +v.toFixed(3)]),
          ),
          machine: `${os.cpus().length} cores, node ${process.version}, load ${os
            .loadavg()
            .map(l => l.toFixed(1))
            .join(' ')}`,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await consumer.stop(1000);
    await connection.stop();
    await pool.end();
    await ledgerPool.end();
    fs.closeSync(devNull);
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
