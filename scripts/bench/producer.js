#!/usr/bin/env node
// Producer benchmark: npm run bench:producer -- --schedulers 100000 --due 10000
// Seeds its own database and RabbitMQ vhost, runs one real tick at a minute
// boundary and reports evaluation CPU, claims/s, confirmed publishes/s, time
// from slot start to the last confirm, and peak RSS. Removes both at the end.
'use strict';
const os = require('node:os');
const {parseArgs} = require('node:util');
const {createBenchEnvironment} = require('./bench-environment');
const {createPool} = require('../../dist/database/pg-pool');
const {AmqpConnection} = require('../../dist/queue/amqp-connection');
const {TaskPublisher} = require('../../dist/queue/task-publisher');
const {
  assertTopology,
  brokerTopology,
  retrySettings,
} = require('../../dist/queue/topology');
const {loadCandidates} = require('../../dist/producer/candidate');
const {evaluateDue} = require('../../dist/producer/due-evaluator');
const {claimRuns} = require('../../dist/producer/execution-claimer');
const {publishClaims} = require('../../dist/producer/claim-publisher');
const {CronCache} = require('../../dist/scheduling/compiled-cron');

const {values} = parseArgs({
  options: {
    schedulers: {type: 'string', default: '100000'},
    due: {type: 'string', default: '10000'},
  },
});
const total = Number(values.schedulers);
const dueCount = Number(values.due);
if (!(total > 0) || !(dueCount >= 0) || dueCount > total) {
  throw new Error(
    '--schedulers must be > 0 and --due between 0 and --schedulers',
  );
}

// Expressions due at any minute vs. never due at the benchmark slot (mixed,
// so the cache holds many distinct texts as in a real installation).
const DUE_EXPRESSIONS = [
  '* * * * *',
  '*/1 * * * *',
  '0-59 * * * *',
  '* 0-23 * * *',
];
const NEVER_DUE = minute =>
  Array.from(
    {length: 50},
    (_, i) => `${(minute + 1 + (i % 58)) % 60} ${i % 24} * * *`,
  );

const ms = ns => Number(ns) / 1e6;
const now = () => process.hrtime.bigint();

async function main() {
  const env = await createBenchEnvironment();
  const {config, databaseUrl, amqpUrl, logger} = env;
  const pool = createPool(databaseUrl, logger, 5);
  const connection = new AmqpConnection(amqpUrl, logger, {
    onConnect: c =>
      assertTopology(
        () => c.createChannel(),
        brokerTopology(retrySettings(config)),
      ),
  });
  try {
    await connection.start();
    const publisher = new TaskPublisher(connection, logger);

    // Wait for a fresh minute so seeding does not run into the slot.
    const slotMs = Math.ceil((Date.now() + 5000) / 60000) * 60000 + 60000;
    const slot = new Date(slotMs);
    const never = NEVER_DUE(slot.getUTCMinutes());
    await pool.query(
      `INSERT INTO report (name, controller) VALUES ('bench', 'Bench')`,
    );
    await pool.query(
      `INSERT INTO scheduler (description, schedule, report_id, params)
       SELECT 'bench ' || n,
              CASE WHEN n <= $2 THEN ($3::text[])[1 + n % array_length($3::text[], 1)]
                   ELSE ($4::text[])[1 + n % array_length($4::text[], 1)] END,
              1, jsonb_build_object('n', n, 'controller', 'Bench')
         FROM generate_series(1, $1::int) AS n`,
      [total, dueCount, DUE_EXPRESSIONS, never],
    );
    await pool.query('ANALYZE scheduler');
    process.stdout.write(
      `seeded ${total} schedulers (${dueCount} due); waiting for ${slot.toISOString()}\n`,
    );
    await new Promise(resolve =>
      setTimeout(resolve, slotMs - Date.now() + 100),
    );

    const tickStart = now();
    const cpuBefore = process.cpuUsage();
    const candidates = await loadCandidates(pool);
    const loaded = now();
    const evalCpuStart = process.cpuUsage();
    const evaluation = evaluateDue(
      candidates,
      [slot],
      {current: slot, oldest: slot},
      'UTC',
      new CronCache(),
    );
    const evalCpu = process.cpuUsage(evalCpuStart);
    const evaluated = now();
    const claims = await claimRuns(
      pool,
      evaluation.due,
      `bench-${process.pid}`,
    );
    const claimed = now();
    const published = await publishClaims(pool, publisher, claims);
    const confirmed = now();
    const tickCpu = process.cpuUsage(cpuBefore);

    // The ticker fires 100 ms after the boundary, as the producer does.
    const sinceSlot = Date.now() - slotMs;
    // Dispatch lag as the ledger tells it: claim written, confirm arrived.
    const {rows: ledger} = await pool.query(
      `SELECT
         round(extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY published_at - slot)) * 1000) AS p50,
         round(extract(epoch FROM max(published_at - slot)) * 1000) AS last,
         round(extract(epoch FROM max(executed_at - slot)) * 1000) AS last_claim
         FROM scheduler_execution WHERE slot = $1`,
      [slot],
    );
    const results = {
      machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
      schedulers: total,
      due: evaluation.due.length,
      load_candidates_ms: ms(loaded - tickStart).toFixed(0),
      evaluation_cpu_ms: ((evalCpu.user + evalCpu.system) / 1000).toFixed(1),
      evaluation_wall_ms: ms(evaluated - loaded).toFixed(1),
      claimed: claims.length,
      claim_ms: ms(claimed - evaluated).toFixed(0),
      claims_per_s: Math.round(
        claims.length / (ms(claimed - evaluated) / 1000),
      ),
      published_confirmed: published,
      publish_ms: ms(confirmed - claimed).toFixed(0),
      confirmed_publishes_per_s: Math.round(
        published / (ms(confirmed - claimed) / 1000),
      ),
      slot_start_to_last_confirm_ms: Math.round(sinceSlot),
      ledger_last_claim_after_slot_ms: ledger[0].last_claim,
      ledger_p50_published_after_slot_ms: ledger[0].p50,
      ledger_last_published_after_slot_ms: ledger[0].last,
      tick_cpu_ms: ((tickCpu.user + tickCpu.system) / 1000).toFixed(0),
      peak_rss_mb: (process.resourceUsage().maxRSS / 1024).toFixed(0),
    };
    for (const [key, value] of Object.entries(results)) {
      process.stdout.write(`${key.padEnd(32)} ${value}\n`);
    }
    await publisher.close();
  } finally {
    await connection.stop();
    await pool.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
