#!/usr/bin/env node
/**
 * The look ahead of `GET /api/schedulers/{id}/next-runs`, `POST
 * /api/schedulers/preview` and the inventory report: milliseconds on the
 * event loop for schedules whose allowed calendars never match, so the look
 * goes the whole way (5,000 fires or five years). Each case runs in a fresh
 * process (`cold`: nothing remembered) and then four times more (`warm`:
 * the median). `--dist DIR` measures another build (default ./dist).
 *
 *   npm run bench:next-runs [-- --dist /path/to/other/dist]
 */
'use strict';
const {execFileSync} = require('node:child_process');
const path = require('node:path');

const CASES = [
  ['0 3 * * *', 'Europe/Berlin', 1],
  ['0 * * * *', 'Europe/Berlin', 1],
  ['*/5 * * * *', 'America/New_York', 1],
  ['* * * * *', 'Europe/Berlin', 1],
  ['0 * * * *', 'UTC', 100],
  ['0 * * * *', 'Europe/Berlin', 100],
  ['0 * * * *', 'UTC', 1000],
];

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
}

async function measureCase() {
  const dist = process.argv[3];
  const [expression, zone, calendarCount] = JSON.parse(process.argv[4]);
  const {plannedFires} = require(path.join(dist, 'scheduling/planned-fires'));
  const {compileCron, CronCache} = require(
    path.join(dist, 'scheduling/compiled-cron'),
  );
  const {compileCalendar} = require(
    path.join(dist, 'scheduling/calendar-match'),
  );
  const zones = Intl.supportedValuesOf('timeZone');
  // Allowed on one day long past: never matches. With many, each its own zone.
  const calendars = Array.from(
    {length: calendarCount},
    (_, i) =>
      compileCalendar(
        {
          id: i + 1,
          name: `c${i + 1}`,
          kind: 'allowed',
          time_zone: calendarCount > 1 ? zones[(i * 3) % zones.length] : zone,
          dates: ['2001-01-01'],
          times: [],
        },
        new CronCache(),
      ).calendar,
  );
  const after = new Date('2026-11-27T16:00:00Z');
  const times = [];
  let plan;
  for (let i = 0; i < 5; i++) {
    const started = process.hrtime.bigint();
    plan = await plannedFires(compileCron(expression), zone, after, 10, {
      calendars,
    });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  const warm = times.slice(1).sort((a, b) => a - b);
  process.stdout.write(
    JSON.stringify({
      schedule: expression,
      zone,
      calendars: calendarCount,
      fires_looked_at: plan.runs.length + plan.skipped.length,
      cold_ms: Math.round(times[0]),
      warm_ms: Math.round((warm[1] + warm[2]) / 2),
    }) + '\n',
  );
}

if (process.argv[2] === '--case') {
  measureCase().catch(error => {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exitCode = 1;
  });
} else {
  const dist = path.resolve(option('dist', path.join(__dirname, '../../dist')));
  for (const testCase of CASES) {
    process.stdout.write(
      execFileSync(process.execPath, [
        __filename,
        '--case',
        dist,
        JSON.stringify(testCase),
      ]),
    );
  }
}
