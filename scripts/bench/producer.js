#!/usr/bin/env node
// Producer benchmark: npm run bench:producer -- --schedulers 100000 --due 10000
// Seeds its own database and RabbitMQ vhost, runs one real tick at a minute
// boundary and reports evaluation CPU, claims/s, confirmed publishes/s, time
// from slot start to the last confirm, and peak RSS. Removes both at the end.
'use strict';
const os = require('node:os');
const {parseArgs} = require('node:util');
const {createBenchEnvironment} = require('./bench-environment');
const {createProducerPool} = require('../../dist/producer/producer-pool');
const {AmqpConnection} = require('../../dist/queue/amqp-connection');
const {TaskPublisher} = require('../../dist/queue/task-publisher');
const {
  assertTopology,
  brokerTopology,
  retrySettings,
} = require('../../dist/queue/topology');
const {loadCandidates} = require('../../dist/producer/candidate');
const {evaluateDue} = require('../../dist/producer/due-evaluator');
const {loadCalendars} = require('../../dist/producer/calendar-loader');
const {SlotCalendars} = require('../../dist/scheduling/calendar-match');
const {claimRuns} = require('../../dist/producer/execution-claimer');
const {publishClaims} = require('../../dist/producer/claim-publisher');
const {dispatchLagRecorder} = require('../../dist/producer/dispatch-lag');
const {AFTER_BOUNDARY_MS} = require('../../dist/producer/minute-ticker');
const {Metrics} = require('../../dist/metrics/metrics');
const {CronCache} = require('../../dist/scheduling/compiled-cron');

const {values} = parseArgs({
  options: {
    schedulers: {type: 'string', default: '100000'},
    due: {type: 'string', default: '10000'},
    // on: record the producer's metrics as the service does; off: without.
    metrics: {type: 'string', default: 'on'},
    // on: every scheduler follows one blackout calendar of 1,000 dates and
    // 10 times expressions (none matching the slot, so every one is looked at).
    calendar: {type: 'string', default: 'off'},
    // Evaluations timed after the tick (fresh caches each): the median is reported.
    repeat: {type: 'string', default: '7'},
  },
});
if (!['on', 'off'].includes(values.calendar)) {
  process.stderr.write('--calendar must be on or off\n');
  process.exit(2);
}
const repeat = Number(values.repeat);
if (!(Number.isInteger(repeat) && repeat >= 1)) {
  process.stderr.write('--repeat must be a positive integer\n');
  process.exit(2);
}
if (!['on', 'off'].includes(values.metrics)) {
  process.stderr.write('--metrics must be on or off\n');
  process.exit(2);
}
const metrics =
  values.metrics === 'on'
    ? new Metrics(new Set(['producer']), {version: 'bench'})
    : undefined;
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
  // The producer's own pool: its sessions as the producer role has them.
  const pool = createProducerPool({...config, databaseUrl}, logger);
  const connection = new AmqpConnection(amqpUrl, logger, {
    onConnect: c =>
      assertTopology(
        () => c.createChannel(),
        brokerTopology(retrySettings(config)),
      ),
  });
  try {
    await connection.start();
    // As the producer role publishes: over AMQP_PUBLISH_CHANNELS channels.
    const publisher = new TaskPublisher(connection, logger, metrics, {
      channels: config.amqpPublishChannels,
    });

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
    if (values.calendar === 'on') await seedCalendar(pool, slot);
    await pool.query('ANALYZE scheduler');
    process.stdout.write(
      `seeded ${total} schedulers (${dueCount} due); waiting for ${slot.toISOString()}\n`,
    );
    await new Promise(resolve =>
      setTimeout(resolve, slotMs - Date.now() + AFTER_BOUNDARY_MS),
    );

    const tickStart = now();
    const cpuBefore = process.cpuUsage();
    const candidates = await loadCandidates(pool);
    const loaded = now();
    const evalCpuStart = process.cpuUsage();
    const evaluation = await evaluate(pool, candidates, slot);
    const evalCpu = process.cpuUsage(evalCpuStart);
    const evaluated = now();
    const claims = await claimRuns(
      pool,
      evaluation.due,
      `bench-${process.pid}`,
    );
    const claimed = now();
    const published = await publishClaims(
      pool,
      publisher,
      claims,
      dispatchLagRecorder(metrics, 'cron'),
    );
    const confirmed = now();
    const tickCpu = process.cpuUsage(cpuBefore);

    // The tick starts AFTER_BOUNDARY_MS after the boundary, as the producer's.
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
    const repeats = [];
    for (let i = 0; i < repeat; i++) {
      const start = process.cpuUsage();
      await evaluate(pool, candidates, slot);
      const used = process.cpuUsage(start);
      repeats.push((used.user + used.system) / 1000);
    }
    repeats.sort((a, b) => a - b);
    const results = {
      machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
      schedulers: total,
      metrics: values.metrics,
      due: evaluation.due.length,
      load_candidates_ms: ms(loaded - tickStart).toFixed(0),
      evaluation_cpu_ms: ((evalCpu.user + evalCpu.system) / 1000).toFixed(1),
      evaluation_wall_ms: ms(evaluated - loaded).toFixed(1),
      calendar: values.calendar,
      skipped_by_calendar: evaluation.due.filter(run => run.skipReason).length,
      evaluation_cpu_median_ms:
        repeats[Math.floor(repeats.length / 2)].toFixed(1),
      evaluation_cpu_repeats_ms: repeats.map(v => v.toFixed(0)).join(' '),
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

/** What the producer does per slot: calendars loaded and compiled, then matching. */
async function evaluate(pool, candidates, slot) {
  const cache = new CronCache();
  const loaded = await loadCalendars(pool, candidates, cache);
  return evaluateDue(
    candidates,
    [slot],
    {current: slot, oldest: slot},
    'UTC',
    cache,
    new SlotCalendars(loaded.calendars, [slot]),
  );
}

/**
 * One blackout calendar of 1,000 dates (none the slot's day) and 10 times
 * expressions (none the slot's minute), named by every scheduler.
 */
async function seedCalendar(pool, slot) {
  const day = 24 * 60 * 60 * 1000;
  const dates = Array.from({length: 1000}, (_, i) =>
    new Date(slot.getTime() + (i + 2) * day).toISOString().slice(0, 10),
  );
  const hour = (slot.getUTCHours() + 2) % 24;
  const times = Array.from(
    {length: 10},
    (_, i) => `${i * 5}-${i * 5 + 4} ${hour} * * ${i % 7}`,
  );
  const {rows} = await pool.query(
    `INSERT INTO calendar (name, time_zone, kind, dates, times)
     VALUES ('bench', 'Europe/London', 'blackout', $1::jsonb, $2::jsonb)
     RETURNING id`,
    [JSON.stringify(dates), JSON.stringify(times)],
  );
  await pool.query(`UPDATE scheduler SET calendar_ids = $1::jsonb`, [
    JSON.stringify([rows[0].id]),
  ]);
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
