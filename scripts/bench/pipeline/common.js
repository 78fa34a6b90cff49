'use strict';
// Pieces every run of bench:pipeline shares: the seeded schedulers, the
// minute boundary it waits for, and the run ledger's view of one slot.

/** Never due in a run (00:00 on 1 January): the schedule of schedulers waiting for their slot. */
const NEVER_DUE = '0 0 1 1 *';

/** One reminder with one recipient, and `count` schedulers with `schedule`. */
async function seedReminderSchedulers(db, count, schedule = '* * * * *') {
  const {rows: user} = await db.query(
    `INSERT INTO app_user (email, name, password_hash, role)
     VALUES ('bench@example.com', 'bench', 'x', 'viewer') RETURNING id`,
  );
  const {rows: reminder} = await db.query(
    `INSERT INTO reminder (message, user_ids) VALUES ('bench', $1::jsonb) RETURNING id`,
    [JSON.stringify([user[0].id])],
  );
  await db.query(
    `INSERT INTO scheduler (description, schedule, reminder_id, params)
     SELECT 'pipeline ' || n, $3, $2, '{}'
       FROM generate_series(1, $1::int) AS n`,
    [count, reminder[0].id, schedule],
  );
  await db.query('ANALYZE scheduler');
}

/**
 * Makes every scheduler due at `slots` (minute boundaries in a row) and no
 * minute near them, in UTC, the service's default zone: so no earlier
 * minute queues runs ahead of them. Across an hour (…:59, …:00) the lists
 * also name the same minutes an hour before and after, outside any run.
 */
async function dueOnlyAt(db, slots) {
  const list = values => [...new Set(values)].join(',');
  await db.query(`UPDATE scheduler SET schedule = $1`, [
    `${list(slots.map(s => s.getUTCMinutes()))} ${list(slots.map(s => s.getUTCHours()))} * * *`,
  ]);
}

/** `count` minute boundaries in a row, the first `first`; the last is measured. */
function minutesFrom(first, count) {
  return Array.from(
    {length: count},
    (_, i) => new Date(first.getTime() + i * 60_000),
  );
}

/**
 * Waits until a warm-up minute's runs are all done (`done()`), at the
 * latest a second before the next boundary: the measured minute must not
 * start with a warm-up still going, or it would measure both.
 */
async function waitForWarmMinute(done, slot) {
  const deadline = slot.getTime() + 60_000 - 1000;
  if (!(await waitFor(done, deadline - Date.now(), 50))) {
    throw new Error(
      `warm-up minute ${slot.toISOString()} was not done a second before the next boundary`,
    );
  }
}

/** The first minute boundary at least `leadMs` from now. */
function nextBoundary(leadMs) {
  return new Date(Math.ceil((Date.now() + leadMs) / 60_000) * 60_000);
}

const sleep = ms =>
  new Promise(resolve => setTimeout(resolve, Math.max(0, ms)));

/** Polls `done()` every `everyMs` until it is true; false after `timeoutMs`. */
async function waitFor(done, timeoutMs, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await done()) return true;
    await sleep(everyMs);
  }
  return false;
}

const seconds = value => (value === null ? null : +Number(value).toFixed(3));

/**
 * The ledger's times for one slot, in seconds after the boundary: first and
 * last claim written (`executed_at`), first and last publish confirm
 * (`published_at`: between the two, the broker's burst of confirms), task starts
 * (p50, p99, max) and the last finish; tasks/s from the first start to the
 * last finish.
 */
async function ledgerReport(db, slot) {
  const {rows} = await db.query(
    `WITH runs AS (
       SELECT extract(epoch FROM executed_at - $1)::float AS claim_s,
              extract(epoch FROM published_at - $1)::float AS confirm_s,
              extract(epoch FROM started_at - $1)::float AS start_s,
              extract(epoch FROM finished_at - $1)::float AS finish_s,
              status
         FROM scheduler_execution WHERE slot = $1)
     SELECT count(*)::int AS claimed,
            count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
            min(claim_s) AS first_claim_s,
            max(claim_s) AS last_claim_s,
            min(confirm_s) AS first_confirm_s,
            max(confirm_s) AS last_confirm_s,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY confirm_s) AS confirm_p50_s,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY start_s) AS start_p50_s,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY start_s) AS start_p99_s,
            max(start_s) AS start_max_s,
            min(start_s) AS first_start_s,
            max(finish_s) AS last_finish_s
       FROM runs`,
    [slot],
  );
  const r = rows[0];
  const span = r.last_finish_s - r.first_start_s;
  // Task starts per quarter second after the boundary: stalls show as gaps.
  const {rows: quarters} = await db.query(
    `SELECT floor(extract(epoch FROM started_at - $1) * 4)::int AS q, count(*)::int AS n
       FROM scheduler_execution WHERE slot = $1 AND started_at IS NOT NULL
      GROUP BY 1 ORDER BY 1`,
    [slot],
  );
  const startsPerQuarterSecond = [];
  for (const {q, n} of quarters) {
    if (q >= 0 && q < 4 * 120) startsPerQuarterSecond[q] = n;
  }
  return {
    claimed: r.claimed,
    succeeded: r.succeeded,
    first_claim_s: seconds(r.first_claim_s),
    last_claim_s: seconds(r.last_claim_s),
    first_confirm_s: seconds(r.first_confirm_s),
    last_confirm_s: seconds(r.last_confirm_s),
    confirm_p50_s: seconds(r.confirm_p50_s),
    start_p50_s: seconds(r.start_p50_s),
    start_p99_s: seconds(r.start_p99_s),
    start_max_s: seconds(r.start_max_s),
    last_finish_s: seconds(r.last_finish_s),
    tasks_per_s: span > 0 ? Math.round(r.succeeded / span) : null,
    starts_per_quarter_second: Array.from(
      startsPerQuarterSecond,
      n => n ?? 0,
    ).join(' '),
  };
}

/** Start percentiles of seconds-after-the-boundary values. */
function startPercentiles(startsS) {
  const sorted = [...startsS].sort((a, b) => a - b);
  const at = p =>
    sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return {
    start_p50_s: seconds(at(0.5)),
    start_p99_s: seconds(at(0.99)),
    start_max_s: seconds(sorted[sorted.length - 1]),
  };
}

module.exports = {
  NEVER_DUE,
  dueOnlyAt,
  ledgerReport,
  minutesFrom,
  nextBoundary,
  seedReminderSchedulers,
  sleep,
  startPercentiles,
  waitFor,
  waitForWarmMinute,
  seconds,
};
