#!/usr/bin/env node
// Report benchmark: npm run bench:reports -- --rows 100000
// Seeds its own database with --rows executions in one day, then renders the
// ExecutionsReport (the real paged query, the real renderers) to a temporary
// file once per format, each in a fresh process so that its peak RSS is its
// own. Prints rows/s, wall time, CPU and peak RSS. Removes everything at the end.
'use strict';
const {execFileSync} = require('node:child_process');
const os = require('node:os');
const {parseArgs} = require('node:util');

const {values} = parseArgs({
  options: {
    rows: {type: 'string', default: '100000'},
    format: {type: 'string'},
    database: {type: 'string'},
  },
});
const rows = Number(values.rows);
if (!Number.isInteger(rows) || rows < 1) {
  throw new Error('--rows must be a positive integer');
}
const FORMATS = ['CSV', 'Excel', 'PDF'];

/** One format in this process: render and report the measures as JSON. */
async function measure(format, databaseUrl) {
  const {createPool} = require('../../dist/database/pg-pool');
  const {createLogger} = require('../../dist/logging/logger');
  const {
    prepareReport,
    renderReport,
    reportWorkDir,
  } = require('../../dist/reports/report-runner');
  const logger = createLogger({level: 'error', service: 'bench'});
  const db = createPool(databaseUrl, logger, 2);
  const prepared = prepareReport(
    {
      controller: 'ExecutionsReport',
      options_interface: {output: {file: {type: 'Attachment', format}}},
      report_params: {from: '2026-11-20', to: '2026-11-21'},
    },
    {now: new Date('2026-11-21T10:00:00Z'), timeZone: 'UTC', userId: null},
  );
  const work = await reportWorkDir();
  try {
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    const rendered = await renderReport(
      prepared,
      {db, mailer: undefined, logger, timeZone: 'UTC'},
      work.dir,
    );
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const used = process.cpuUsage(cpu);
    process.stdout.write(
      JSON.stringify({
        format,
        rows: rendered.rows,
        ms: Math.round(ms),
        rowsPerSecond: Math.round(rendered.rows / (ms / 1000)),
        cpuMs: Math.round((used.user + used.system) / 1000),
        bytes: rendered.bytes,
        // maxRSS is in KiB: the peak of this process, which rendered one format.
        peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      }) + '\n',
    );
  } finally {
    await work.cleanup();
    await db.end();
  }
}

async function main() {
  const {createBenchEnvironment} = require('./bench-environment');
  const {createPool} = require('../../dist/database/pg-pool');
  const env = await createBenchEnvironment();
  try {
    const pool = createPool(env.databaseUrl, env.logger, 2);
    await pool.query(
      `INSERT INTO worker (name, command) VALUES ('bench', 'bench-worker')`,
    );
    await pool.query(
      `INSERT INTO scheduler (description, schedule, worker_id)
       SELECT 'Bench scheduler number ' || n, '*/5 * * * *', 1
         FROM generate_series(1, 100) n`,
    );
    const seedStart = Date.now();
    await pool.query(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, executed_at, container_id, status,
          attempts, started_at, finished_at, duration_ms, last_error)
       SELECT 1 + n % 100, 'cron-bench-' || n,
              '2026-11-20T00:00:00Z'::timestamptz + (n::bigint * 86399 / $1) * interval '1 second',
              'bench-host-1234', CASE WHEN n % 10 = 0 THEN 'failed' ELSE 'succeeded' END,
              1 + n % 3, '2026-11-20T00:00:01Z', '2026-11-20T00:00:02Z', n % 5000,
              CASE WHEN n % 10 = 0 THEN 'worker exited with code 3' END
         FROM generate_series(1, $1) n`,
      [rows],
    );
    await pool.query('ANALYZE scheduler_execution');
    await pool.end();
    process.stdout.write(
      `Seeded ${rows} executions in ${Date.now() - seedStart} ms. ` +
        `Machine: ${os.cpus().length} x ${os.cpus()[0].model}, ` +
        `${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ` +
        `load average ${os.loadavg()[0].toFixed(1)}\n`,
    );
    const results = FORMATS.map(format =>
      JSON.parse(
        execFileSync(
          process.execPath,
          [
            __filename,
            '--format',
            format,
            '--rows',
            String(rows),
            '--database',
            env.databaseUrl,
          ],
          {encoding: 'utf8'},
        ),
      ),
    );
    const line = cells =>
      process.stdout.write(
        cells.map(c => String(c).padStart(12)).join('') + '\n',
      );
    line([
      'format',
      'rows',
      'wall ms',
      'rows/s',
      'CPU ms',
      'file MB',
      'peak RSS MB',
    ]);
    for (const r of results) {
      line([
        r.format,
        r.rows,
        r.ms,
        r.rowsPerSecond,
        r.cpuMs,
        (r.bytes / 2 ** 20).toFixed(1),
        r.peakRssMb,
      ]);
    }
  } finally {
    await env.remove();
  }
}

(values.format ? measure(values.format, values.database) : main()).catch(
  error => {
    process.stderr.write(`${error.stack}\n`);
    process.exitCode = 1;
  },
);
