#!/usr/bin/env node
// Per-task budget of the consumer: node scripts/bench/task-budget.js [--tasks 3000]
// One real TaskConsumer (prefetch 1, the real run ledger, the real
// ReminderExecutor with one recipient, info logs written synchronously as the
// console transport does) on its own database and vhost. Each step of each
// task is timed in process, and the averages printed in milliseconds:
// ledger start mark → log and set-up → task → finish mark → ack and the next
// delivery (the gap until the next start mark begins).
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

/** Wraps `object[method]` to record when each call begins and ends in `current`. */
function timed(object, method, begin, end) {
  const original = object[method].bind(object);
  object[method] = async (...args) => {
    if (begin === 'start_begin') {
      current = {start_begin: now()};
      marks.push(current);
    }
    const mark = current;
    mark[begin] = now();
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
  timed(ledger, 'start', 'start_begin', 'start_end');
  timed(reminder, 'execute', 'task_begin', 'task_end');
  timed(ledger, 'finished', 'finish_begin', 'finish_end');
  const consumer = new TaskConsumer({
    connection,
    ledger,
    executors: {reminder, worker: reminder, report: reminder},
    retry: settings,
    prefetch: 1,
    logger,
    metrics: new Metrics(new Set(['consumer']), {version: 'bench'}),
  });
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
    while (
      marks.length < tasks ||
      !(marks[tasks - 1].finish_end ?? marks[tasks - 1].task_end)
    ) {
      await new Promise(resolve => setTimeout(resolve, 20));
    }
    const elapsed = now() - began;
    // The first 10 % warm up (JIT, statement preparation).
    const steady = marks.slice(Math.floor(tasks / 10), tasks - 1);
    const mean = pick =>
      steady.reduce(
        (s, m, i) => s + pick(m, marks[Math.floor(tasks / 10) + i + 1]),
        0,
      ) / steady.length;
    const lastOwn = m => m.finish_end ?? m.task_end;
    const budget = {
      'ledger start mark': mean(m => m.start_end - m.start_begin),
      "'Task started' log, metrics, set-up": mean(
        m => m.task_begin - m.start_end,
      ),
      'task (the reminder statement[s])': mean(m => m.task_end - m.task_begin),
      "'Reminder sent' to the finish mark": mean(
        m => (m.finish_begin ?? m.task_end) - m.task_end,
      ),
      'ledger finish mark': mean(
        m => (m.finish_end ?? m.task_end) - (m.finish_begin ?? m.task_end),
      ),
      "'Task succeeded' log, ack, next delivery, parse": mean(
        (m, next) => next.start_begin - lastOwn(m),
      ),
    };
    const total = Object.values(budget).reduce((a, b) => a + b, 0);
    process.stdout.write(
      `${JSON.stringify(
        {
          tasks,
          tasks_per_s: Math.round(tasks / (elapsed / 1000)),
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
