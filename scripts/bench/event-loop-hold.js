#!/usr/bin/env node
/**
 * How long one heavy request keeps a real API process from answering
 * others: while a backfill dry run, a preview or a next-runs request of a
 * scheduler naming 100 calendars (each in its own zone, allowed on one day
 * long past, so every fire is judged by all of them) is under way, a second
 * client asks `GET /api/ping` one request after another. Reported per case:
 * the heavy request's time, and the pings answered meanwhile with their
 * slowest and p99 latency. A ping slower than the heavy request means the
 * API answered nothing else while it ran.
 *
 *   npm run bench:event-loop-hold [-- --repeat 3 --concurrent 1
 *     --calendars 100 --root DIR]
 *
 * --concurrent K sends K copies of the heavy request at once. --calendars N
 * names N calendars instead of 100 (more than 100 is refused by the API).
 * --root DIR starts another checkout's build (its dist/index.js) as the
 * API; the database and vhost come from this one.
 */
'use strict';
const path = require('node:path');
const {parseArgs} = require('node:util');
const {createBenchEnvironment} = require('./bench-environment');
const {percentile, startApiProcess} = require('./api-process');
const {createPool} = require('../../dist/database/pg-pool');
const {hashPassword} = require('../../dist/auth/password-hasher');

const {values} = parseArgs({
  options: {
    repeat: {type: 'string', default: '3'},
    concurrent: {type: 'string', default: '1'},
    calendars: {type: 'string', default: '100'},
    root: {type: 'string'},
  },
});
const repeat = positive('repeat');
const concurrent = positive('concurrent');
const calendarCount = positive('calendars');
const PASSWORD = 'bench-password-long-enough';
const SCHEDULE = '0 3 * * *';
const ZONE = 'Europe/Berlin';

function positive(name) {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a positive integer\n`);
    process.exit(2);
  }
  return n;
}

async function call(base, auth, method, route, body) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: {'content-type': 'application/json', ...auth},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await res.json();
  if (res.status >= 300)
    throw new Error(
      `${method} ${route}: ${res.status} ${JSON.stringify(answer)}`,
    );
  return answer;
}

/** Pings one after another until `done` settles; their latencies in ms. */
async function pingUntil(base, done) {
  let finished = false;
  done.then(
    () => (finished = true),
    () => (finished = true),
  );
  const latencies = [];
  while (!finished) {
    const started = performance.now();
    await (await fetch(`${base}/ping`)).arrayBuffer();
    latencies.push(performance.now() - started);
  }
  return latencies.sort((a, b) => a - b);
}

async function measure(base, heavy) {
  // The pinger is running before the heavy requests go out.
  let release;
  const heavyDone = new Promise(resolve => (release = resolve));
  const pings = pingUntil(base, heavyDone);
  await new Promise(resolve => setTimeout(resolve, 50));
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({length: concurrent}, () => heavy()),
  );
  const heavyMs = performance.now() - started;
  release();
  const latencies = await pings;
  return {
    heavy_ms: Math.round(heavyMs),
    pings: latencies.length,
    ping_p99_ms: percentile(latencies, 0.99),
    ping_max_ms: Math.round(latencies[latencies.length - 1] * 10) / 10,
    answers: [...new Set(answers)],
  };
}

async function main() {
  const env = await createBenchEnvironment();
  const pool = createPool(env.databaseUrl, env.logger, 2);
  const api = startApiProcess(
    env,
    values.root ? path.resolve(values.root) : undefined,
  );
  try {
    await pool.query(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('admin@example.com', 'Admin', $1, 'admin')`,
      [await hashPassword(PASSWORD)],
    );
    await pool.query(
      `INSERT INTO worker (name, command) VALUES ('w', 'sample-worker')`,
    );
    const base = await api.url;
    const {token} = await call(base, {}, 'POST', '/auth/login', {
      email: 'admin@example.com',
      password: PASSWORD,
    });
    const auth = {authorization: `Bearer ${token}`};
    const zones = Intl.supportedValuesOf('timeZone');
    const calendarIds = [];
    for (let i = 0; i < calendarCount; i++) {
      const calendar = await call(base, auth, 'POST', '/calendars', {
        name: `never ${i + 1}`,
        kind: 'allowed',
        time_zone: zones[(i * 3) % zones.length],
        dates: ['2001-01-01'],
      });
      calendarIds.push(calendar.id);
    }
    const scheduler = await call(base, auth, 'POST', '/schedulers', {
      description: 'event loop hold',
      schedule: SCHEDULE,
      timezone: ZONE,
      worker_id: 1,
      calendar_ids: calendarIds,
    });
    const now = Date.now();
    const cases = {
      'backfill dry run, 990 daily slots': () =>
        call(base, auth, 'POST', `/schedulers/${scheduler.id}/backfill`, {
          from: new Date(now - 990 * 86_400_000).toISOString(),
          to: new Date(now - 60_000).toISOString(),
          dry_run: true,
        }).then(a => `${a.count} to run, ${a.skipped.length} skipped`),
      preview: () =>
        call(base, auth, 'POST', '/schedulers/preview', {
          schedule: SCHEDULE,
          timezone: ZONE,
          calendar_ids: calendarIds,
          count: 10,
        }).then(a => `${a.skipped.length} fires looked at`),
      'next-runs': () =>
        call(base, auth, 'GET', `/schedulers/${scheduler.id}/next-runs`).then(
          a => `${a.skipped.length} fires looked at`,
        ),
    };
    const results = [];
    for (const [name, heavy] of Object.entries(cases)) {
      for (let run = 1; run <= repeat; run++) {
        results.push({case: name, run, ...(await measure(base, heavy))});
      }
    }
    process.stdout.write(
      JSON.stringify(
        {
          calendars: calendarCount,
          concurrent,
          root: values.root ?? '.',
          results,
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    api.child.kill('SIGTERM');
    await new Promise(resolve => api.child.once('exit', resolve));
    await pool.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
