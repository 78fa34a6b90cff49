#!/usr/bin/env node
// Report isolation benchmark (issue 25):
//   npm run bench:report-isolation [-- --rows 200000 --samples 10]
// Starts a real worker process (APP_MODE=worker, REPORT_CONCURRENCY 1) on a
// database and vhost of its own, seeds --rows executions, queues three large
// PDF reports of them, and while they run publishes one cron worker task
// every 2 s. Prints each cron task's start delay (publish -> ledger
// started_at) and how long the reports took. Removes everything at the end.
// --root DIR runs the worker built in DIR (to compare with another build).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {spawn} = require('node:child_process');
const {parseArgs} = require('node:util');
const amqp = require('amqplib');
const {createBenchEnvironment} = require('./bench-environment');
const {createPool} = require('../../dist/database/pg-pool');
const {TASK_QUEUE} = require('../../dist/queue/topology');

const {values} = parseArgs({
  options: {
    rows: {type: 'string', default: '200000'},
    samples: {type: 'string', default: '10'},
    root: {type: 'string', default: path.resolve(__dirname, '../..')},
  },
});
const rows = Number(values.rows);
const samples = Number(values.samples);
if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(samples)) {
  throw new Error('--rows and --samples must be positive integers');
}
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function startWorkerProcess(env) {
  const child = spawn(
    process.execPath,
    [path.join(values.root, 'dist/index.js')],
    {env, stdio: ['ignore', 'pipe', 'inherit']},
  );
  const ready = new Promise((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', chunk => {
      if (seen === null) return;
      seen += chunk.toString();
      if (seen.includes('cron-worker started')) {
        seen = null;
        resolve();
      } else if (seen.length > 1e6) seen = seen.slice(-1e4);
    });
    child.once('exit', code => reject(new Error(`worker exited (${code})`)));
  });
  return {child, ready};
}

async function main() {
  const env = await createBenchEnvironment();
  const {databaseUrl, amqpUrl, logger} = env;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-isolation-'));
  const workersDir = path.join(scratch, 'workers');
  fs.mkdirSync(workersDir);
  fs.writeFileSync(path.join(workersDir, 'quick'), '#!/bin/sh\nexit 0\n', {
    mode: 0o755,
  });
  const pool = createPool(databaseUrl, logger, 2);
  const worker = startWorkerProcess({
    ...process.env,
    APP_MODE: 'worker',
    LOG_LEVEL: 'info',
    DATABASE_URL: databaseUrl,
    AMQP_URL: amqpUrl,
    WORKERS_DIR: workersDir,
    MAIL_OUTBOX_DIR: path.join(scratch, 'outbox'),
    REPORT_CONCURRENCY: '1',
    CRON_MAX_RETRIES: '0',
  });
  const connection = await amqp.connect(amqpUrl);
  try {
    await pool.query(
      `INSERT INTO worker (name, command) VALUES ('quick', 'quick');
       INSERT INTO report (name, controller) VALUES ('Executions', 'ExecutionsReport');
       INSERT INTO user_group (name) VALUES ('bench');
       INSERT INTO app_user (email, name, password_hash, role, group_id)
         VALUES ('bench@example.com', 'Bench', 'x', 'admin', 1);
       INSERT INTO scheduler (description, schedule, worker_id)
         SELECT 'Bench ' || n, '*/5 * * * *', 1 FROM generate_series(1, 100) n;`,
    );
    await pool.query(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, executed_at, container_id, status,
          attempts, started_at, finished_at, duration_ms)
       SELECT 1 + n % 100, 'cron-bench-' || n,
              '2026-11-20T00:00:00Z'::timestamptz + (n::bigint * 86399 / $1) * interval '1 second',
              'bench-host', 'succeeded', 1, '2026-11-20T00:00:01Z', '2026-11-20T00:00:02Z', n % 5000
         FROM generate_series(1, $1) n`,
      [rows],
    );
    await pool.query('ANALYZE scheduler_execution');
    await worker.ready;
    const channel = await connection.createConfirmChannel();
    const publish = async (message, executionId, key) => {
      channel.sendToQueue(TASK_QUEUE, Buffer.from(JSON.stringify(message)), {
        persistent: true,
        headers: {'x-execution-id': executionId, 'x-execution-key': key},
      });
      await channel.waitForConfirms();
    };
    /** A run row and its message, as the producer makes them. */
    const run = async (scheduler, message) => {
      const key = `manual-bench-${Date.now()}-${Math.random()}`;
      const {rows: made} = await pool.query(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
         VALUES ($1, $2, 'bench', 'published', clock_timestamp()) RETURNING id`,
        [scheduler, key],
      );
      const id = Number(made[0].id);
      await publish({...message, scheduler_id: scheduler}, id, key);
      return id;
    };
    const reportParams = {
      controller: 'ExecutionsReport',
      options_interface: {
        output: {file: {type: 'Attachment', format: 'PDF'}},
        delivery: {email: true, deliver_to: {group_id: [1]}},
      },
      report_params: {from: '2026-11-20', to: '2026-11-21'},
    };
    const {rows: reportSchedulers} = await pool.query(
      `INSERT INTO scheduler (description, schedule, report_id, params, user_id)
       SELECT 'Big report ' || n, '0 6 * * *', 1, $1, 1 FROM generate_series(1, 3) n
       RETURNING id`,
      [reportParams],
    );
    const reportsQueued = Date.now();
    const reportRuns = [];
    for (const {id} of reportSchedulers) {
      reportRuns.push(
        await run(id, {
          type: 'report',
          id: 1,
          params_scheduler: JSON.stringify(reportParams),
        }),
      );
    }
    const delays = [];
    for (let i = 0; i < samples; i++) {
      await sleep(2000);
      const id = await run(1, {type: 'worker', id: 1, params_scheduler: '{}'});
      for (;;) {
        const {rows: found} = await pool.query(
          `SELECT extract(epoch FROM started_at - published_at) * 1000 AS ms,
                  (SELECT count(*) FROM scheduler_execution
                    WHERE id = ANY($2) AND status = 'running')::int AS reports_running
             FROM scheduler_execution WHERE id = $1 AND started_at IS NOT NULL`,
          [id, reportRuns],
        );
        if (found.length > 0) {
          delays.push({
            ms: Math.round(Number(found[0].ms)),
            reportsRunning: found[0].reports_running,
          });
          break;
        }
        await sleep(20);
      }
    }
    for (;;) {
      const {rows: open} = await pool.query(
        `SELECT status, last_error FROM scheduler_execution WHERE id = ANY($1)`,
        [reportRuns],
      );
      if (open.every(r => ['succeeded', 'failed'].includes(r.status))) {
        const sorted = delays.map(d => d.ms).sort((a, b) => a - b);
        process.stdout.write(
          `${JSON.stringify(
            {
              machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), node ${process.version}, load ${os.loadavg()[0].toFixed(1)}`,
              rows_per_report: rows,
              reports: open.map(
                r => r.status + (r.last_error ? `: ${r.last_error}` : ''),
              ),
              reports_seconds: (Date.now() - reportsQueued) / 1000,
              cron_start_delay_ms: delays,
              cron_start_delay_p50_ms: sorted[Math.floor(sorted.length / 2)],
              cron_start_delay_max_ms: sorted[sorted.length - 1],
            },
            null,
            2,
          )}\n`,
        );
        break;
      }
      await sleep(500);
    }
  } finally {
    await connection.close().catch(() => undefined);
    worker.child.kill('SIGKILL');
    await pool.end();
    fs.rmSync(scratch, {recursive: true, force: true});
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
