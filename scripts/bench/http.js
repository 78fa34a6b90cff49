#!/usr/bin/env node
// HTTP task benchmark (issue 27):
//   npm run bench:http [-- --tasks 1000 --slow 50 --slow-timeout-ms 10000 --concurrency 64]
// Starts a real worker process (APP_MODE=worker, OUTBOUND_ALLOW=127.0.0.2)
// on a database and vhost of its own and a local receiver on 127.0.0.2.
// Publishes --tasks HTTP runs at once, as the producer does for one minute
// slot, twice: all fast, then with --slow of them (spread evenly) calling a
// path that never answers, so they run into their timeout. Prints, for each
// round, the time from the slot (first publish) to the last call start and
// to the last fast call start. Retries are off, so every run is one call.
// Removes everything at the end.
'use strict';
const crypto = require('node:crypto');
const http = require('node:http');
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
    tasks: {type: 'string', default: '1000'},
    slow: {type: 'string', default: '50'},
    'slow-timeout-ms': {type: 'string', default: '10000'},
    concurrency: {type: 'string', default: '64'},
  },
});
const tasks = Number(values.tasks);
const slow = Number(values.slow);
const slowTimeoutMs = Number(values['slow-timeout-ms']);
for (const [name, value] of Object.entries({tasks, slow, slowTimeoutMs})) {
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(`--${name} must be a non-negative integer`);
  }
}
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** Records when each call arrives; /slow never answers. */
function startReceiver() {
  const starts = [];
  const held = new Set();
  const server = http.createServer((request, response) => {
    starts.push({at: Date.now(), path: request.url});
    request.resume();
    if (request.url === '/slow') {
      held.add(response);
      response.on('close', () => held.delete(response));
      return;
    }
    response.end('ok');
  });
  return new Promise(resolve =>
    server.listen(0, '127.0.0.2', () =>
      resolve({
        starts,
        port: server.address().port,
        close: () => {
          for (const response of held) response.destroy();
          server.closeAllConnections();
          server.close();
        },
      }),
    ),
  );
}

function startWorkerProcess(env) {
  const child = spawn(
    process.execPath,
    [path.resolve(__dirname, '../../dist/index.js')],
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
  const receiver = await startReceiver();
  const pool = createPool(databaseUrl, logger, 4);
  const worker = startWorkerProcess({
    ...process.env,
    APP_MODE: 'worker',
    LOG_LEVEL: 'info',
    DATABASE_URL: databaseUrl,
    AMQP_URL: amqpUrl,
    OUTBOUND_ALLOW: '127.0.0.2',
    HTTP_TASK_CONCURRENCY: values.concurrency,
    CRON_MAX_RETRIES: '0',
  });
  const connection = await amqp.connect(amqpUrl);
  try {
    const base = `http://127.0.0.2:${receiver.port}`;
    const secret = `whsec_${crypto.randomBytes(32).toString('base64')}`;
    await pool.query(
      `INSERT INTO http_target (name, url, timeout_ms, signing_secret) VALUES
         ('fast', $1, 30000, $4), ('slow', $2, $3, $4)`,
      [`${base}/fast`, `${base}/slow`, slowTimeoutMs, secret],
    );
    await pool.query(
      `INSERT INTO scheduler (description, schedule, http_target_id)
       SELECT 'Bench ' || n, '* * * * *', 1 FROM generate_series(1, $1) n`,
      [tasks],
    );
    await worker.ready;
    const channel = await connection.createConfirmChannel();

    async function round(label, slowCount) {
      receiver.starts.length = 0;
      const every = slowCount > 0 ? Math.floor(tasks / slowCount) : Infinity;
      const isSlow = i =>
        slowCount > 0 && i % every === 0 && i / every < slowCount;
      const key = `cron-bench-${label}`;
      const {rows} = await pool.query(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
         SELECT id, $1, 'bench', 'published', now() FROM scheduler ORDER BY id
         RETURNING id, scheduler_id`,
        [key],
      );
      const slot = Date.now();
      rows.forEach((row, i) => {
        const target = isSlow(i) ? 2 : 1;
        channel.sendToQueue(
          TASK_QUEUE,
          Buffer.from(
            JSON.stringify({
              type: 'http',
              id: target,
              scheduler_id: row.scheduler_id,
              params_scheduler: '{}',
            }),
          ),
          {
            persistent: true,
            headers: {'x-execution-id': Number(row.id), 'x-execution-key': key},
          },
        );
      });
      await channel.waitForConfirms();
      const published = Date.now();
      for (;;) {
        const {rows: left} = await pool.query(
          `SELECT count(*)::int AS n FROM scheduler_execution
            WHERE execution_key = $1 AND status NOT IN ('succeeded', 'failed')`,
          [key],
        );
        if (left[0].n === 0) break;
        await sleep(100);
      }
      const done = Date.now();
      const fast = receiver.starts.filter(s => s.path === '/fast');
      const last = list => Math.max(...list.map(s => s.at)) - slot;
      const {rows: outcome} = await pool.query(
        `SELECT status, count(*)::int AS n FROM scheduler_execution
          WHERE execution_key = $1 GROUP BY status ORDER BY status`,
        [key],
      );
      return {
        round: label,
        tasks,
        slow: slowCount,
        publish_ms: published - slot,
        slot_to_last_start_ms: last(receiver.starts),
        slot_to_last_fast_start_ms: last(fast),
        slot_to_all_done_ms: done - slot,
        outcomes: Object.fromEntries(outcome.map(r => [r.status, r.n])),
      };
    }

    const results = [await round('all-fast', 0)];
    results.push(await round('with-slow', slow));
    process.stdout.write(
      `${JSON.stringify(
        {
          machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), node ${process.version}, load ${os.loadavg()[0].toFixed(1)}`,
          http_task_concurrency: Number(values.concurrency),
          slow_timeout_ms: slowTimeoutMs,
          results,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await connection.close().catch(() => undefined);
    worker.child.kill('SIGKILL');
    receiver.close();
    await pool.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
