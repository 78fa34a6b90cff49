#!/usr/bin/env node
/**
 * What the database's time zone check costs a scheduler write: single-row
 * INSERTs and UPDATEs that set a zone (as the API writes), one after the
 * other, and one bulk INSERT ... SELECT of zoned schedulers, on a database of
 * the benchmark's own.
 *
 *   npm run bench:zoned-writes [-- --writes 500 --bulk 10000]
 */
'use strict';
const {Client} = require('pg');
const {createBenchEnvironment} = require('./bench-environment');

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'Asia/Tokyo',
  'Australia/Sydney',
  'America/Sao_Paulo',
];

function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = q =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const mean = sorted.reduce((sum, t) => sum + t, 0) / sorted.length;
  return {
    mean_ms: +mean.toFixed(2),
    p50_ms: +at(0.5).toFixed(2),
    p99_ms: +at(0.99).toFixed(2),
  };
}

async function timed(work) {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function main() {
  const writes = option('writes', 500);
  const bulk = option('bulk', 10000);
  const env = await createBenchEnvironment();
  const client = new Client({connectionString: env.databaseUrl});
  await client.connect();
  try {
    const {
      rows: [report],
    } = await client.query(
      `INSERT INTO report (name, controller) VALUES ('bench', 'Bench') RETURNING id`,
    );
    const inserts = [];
    const ids = [];
    for (let i = 0; i < writes; i++) {
      inserts.push(
        await timed(async () => {
          const {rows} = await client.query(
            `INSERT INTO scheduler (description, schedule, report_id, stay_alive, timezone)
             VALUES ($1, '0 9 * * *', $2, false, $3) RETURNING id`,
            [`zoned ${i}`, report.id, ZONES[i % ZONES.length]],
          );
          ids.push(rows[0].id);
        }),
      );
    }
    const updates = [];
    for (let i = 0; i < writes; i++) {
      updates.push(
        await timed(() =>
          client.query('UPDATE scheduler SET timezone = $1 WHERE id = $2', [
            ZONES[(i + 1) % ZONES.length],
            ids[i],
          ]),
        ),
      );
    }
    const bulkMs = await timed(() =>
      client.query(
        `INSERT INTO scheduler (description, schedule, report_id, stay_alive, timezone)
         SELECT 'bulk ' || g, '0 9 * * *', $1, false, ($2::text[])[1 + g % $3]
           FROM generate_series(1, $4) AS g`,
        [report.id, ZONES, ZONES.length, bulk],
      ),
    );
    process.stdout.write(
      JSON.stringify({
        writes,
        insert: summary(inserts),
        update_zone: summary(updates),
        bulk_rows: bulk,
        bulk_insert_s: +(bulkMs / 1000).toFixed(2),
      }) + '\n',
    );
  } finally {
    await client.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
