#!/usr/bin/env node
// Worker output benchmark:
//   npm run bench:worker-output [-- --megabytes 1024]
// Starts a real consumer process (APP_MODE=worker) on a database and vhost of
// its own, runs two workers that each print --megabytes MiB (one in a single
// line, one in short lines) and prints the consumer's peak RSS (VmHWM from
// /proc) before and after, and whether both runs succeeded.
// --root DIR runs the service built in DIR (to compare with another build).
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
    megabytes: {type: 'string', default: '1024'},
    root: {type: 'string', default: path.resolve(__dirname, '../..')},
  },
});
const megabytes = Number(values.megabytes);

const procStatus = (pid, field) => {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match ? Math.round(Number(match[1]) / 1024) : undefined;
};

function startConsumer(env) {
  const child = spawn(
    process.execPath,
    // As package.json's start:worker runs it.
    ['--max-semi-space-size=8', path.join(values.root, 'dist/index.js')],
    {env, stdio: ['ignore', 'pipe', 'inherit']},
  );
  const ready = new Promise((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', chunk => {
      if (seen !== null) {
        seen += chunk.toString();
        if (seen.includes('Consuming tasks')) {
          seen = null;
          resolve();
        } else if (seen.length > 1e6) seen = seen.slice(-1e4);
      }
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`consumer exited (${signal ?? code}) before consuming`)),
    );
  });
  return {child, ready};
}

async function main() {
  const env = await createBenchEnvironment();
  const {databaseUrl, amqpUrl, logger} = env;
  const workersDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-output-'));
  const scripts = {
    'one-line': `#!/bin/sh\nhead -c ${megabytes}M /dev/zero | tr '\\0' x\n`,
    'many-lines': `#!/bin/sh\nyes 'a line of worker output that goes on and on' | head -c ${megabytes}M\n`,
  };
  for (const [name, body] of Object.entries(scripts)) {
    fs.writeFileSync(path.join(workersDir, name), body, {mode: 0o755});
  }
  const pool = createPool(databaseUrl, logger, 2);
  const consumer = startConsumer({
    ...process.env,
    APP_MODE: 'worker',
    DATABASE_URL: databaseUrl,
    AMQP_URL: amqpUrl,
    WORKERS_DIR: workersDir,
    CRON_TASK_TIMEOUT_MS: String(28 * 60 * 1000),
    CRON_MAX_RETRIES: '0',
  });
  let exit;
  consumer.child.once('exit', (code, signal) => (exit = signal ?? code));
  try {
    await consumer.ready;
    const pid = consumer.child.pid;
    const results = {
      machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
      megabytes_per_worker: megabytes,
      consumer_rss_idle_mb: procStatus(pid, 'VmRSS'),
    };
    const connection = await amqp.connect(amqpUrl);
    const channel = await connection.createConfirmChannel();
    for (const name of Object.keys(scripts)) {
      const {rows: workers} = await pool.query(
        `INSERT INTO worker (name, command) VALUES ($1, $1) RETURNING id`,
        [name],
      );
      const {rows: schedulers} = await pool.query(
        `INSERT INTO scheduler (description, schedule, worker_id) VALUES ($1, '* * * * *', $2) RETURNING id`,
        [name, workers[0].id],
      );
      const {rows: executions} = await pool.query(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
         VALUES ($1, 'bench', 'bench', 'published', now()) RETURNING id`,
        [schedulers[0].id],
      );
      const started = Date.now();
      channel.sendToQueue(
        TASK_QUEUE,
        Buffer.from(
          JSON.stringify({
            type: 'worker',
            id: workers[0].id,
            scheduler_id: schedulers[0].id,
            params_scheduler: '{}',
          }),
        ),
        {
          persistent: true,
          headers: {
            'x-execution-id': Number(executions[0].id),
            'x-execution-key': 'bench',
          },
        },
      );
      await channel.waitForConfirms();
      let row;
      for (;;) {
        if (exit !== undefined) break;
        const {rows} = await pool.query(
          `SELECT * FROM scheduler_execution WHERE id = $1`,
          [executions[0].id],
        );
        row = rows[0];
        if (['succeeded', 'failed', 'retrying'].includes(row.status)) break;
        await new Promise(resolve => setTimeout(resolve, 200));
      }
      results[name] = {
        status: exit !== undefined ? `consumer died (${exit})` : row.status,
        output_truncated: row?.output_truncated,
        seconds: (Date.now() - started) / 1000,
        consumer_peak_rss_mb:
          exit !== undefined ? undefined : procStatus(pid, 'VmHWM'),
      };
      if (exit !== undefined) break;
    }
    await connection.close();
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  } finally {
    if (exit === undefined) consumer.child.kill('SIGKILL');
    await pool.end();
    fs.rmSync(workersDir, {recursive: true, force: true});
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
