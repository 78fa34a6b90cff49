#!/usr/bin/env node
/**
 * `POST /api/calendars/import`'s parse: wall milliseconds of one import of a
 * small iCalendar file (the tests' holidays.ics: a yearly rule and three
 * dates), each in its own worker thread as the API runs it, from the call to
 * the answer. That is the worker's start (loading its modules) and the
 * parse together, which the API's caller waits for; an import refused
 * (over its budget, say) is counted by its error. `--busy K` keeps K
 * processes spinning meanwhile (a loaded machine); `--dist DIR` measures
 * another build (default ./dist).
 *
 *   npm run bench:ics-import [-- --imports 20] [--busy 0] [--dist DIR]
 */
'use strict';
const {fork} = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const {parseArgs} = require('node:util');

if (process.argv[2] === '--spin') {
  // A busy loop until the parent ends it, or is gone (killed, it could not
  // end this one: a spinner left behind would burn a core for good).
  const parent = process.ppid;
  for (let i = 0; ; i++) {
    if (i % 1e7 === 0 && process.ppid !== parent) process.exit(0);
  }
}

const fail = message => {
  process.stderr.write(`${message}\n`);
  process.exit(2);
};

let values;
try {
  ({values} = parseArgs({
    options: {
      imports: {type: 'string', default: '20'},
      busy: {type: 'string', default: '0'},
      dist: {type: 'string', default: path.join(__dirname, '../../dist')},
    },
  }));
} catch (error) {
  fail(error.message);
}
/** A whole number written as digits, from `min` to `max`; else the run stops. */
function count(flag, min, max) {
  const raw = values[flag];
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    fail(`--${flag} must be an integer from ${min} to ${max}`);
  }
  return Number(raw);
}
const imports = count('imports', 1, 1000);
const busy = count('busy', 0, 64);
const dist = path.resolve(values.dist);
let importAllDayDatesIsolated;
try {
  ({importAllDayDatesIsolated} = require(
    path.join(dist, 'calendars/ical-import-isolated'),
  ));
} catch (error) {
  fail(`--dist ${dist}: no build there (${error.code ?? error.message})`);
}
const ics = fs.readFileSync(
  path.join(__dirname, '../../src/__tests__/fixtures/calendars/holidays.ics'),
  'utf8',
);

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main() {
  const spinners = Array.from({length: busy}, () =>
    fork(__filename, ['--spin'], {stdio: 'ignore'}),
  );
  try {
    const times = [];
    const refused = {};
    let dates;
    for (let i = 0; i < imports; i++) {
      const started = process.hrtime.bigint();
      try {
        const result = await importAllDayDatesIsolated(
          ics,
          new Date('2026-12-02T00:00:00Z'),
          5000,
        );
        dates = result.dates.length;
      } catch (error) {
        // A readable file refused (over the budget on a busy machine, say):
        // counted by its error, and its time is still measured.
        const name = error?.name ?? 'Error';
        refused[name] ??= {count: 0, first: String(error?.message ?? error)};
        refused[name].count++;
      }
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    const sorted = [...times].sort((a, b) => a - b);
    process.stdout.write(
      JSON.stringify(
        {
          benchmark: 'ics-import',
          dist,
          imports,
          busy_processes: busy,
          dates_per_import: dates ?? null,
          refused,
          ms: {
            min: +sorted[0].toFixed(1),
            p50: +percentile(sorted, 50).toFixed(1),
            max: +sorted[sorted.length - 1].toFixed(1),
            each: times.map(t => Math.round(t)),
          },
          machine: {
            cpus: require('node:os').cpus().length,
            node: process.version,
          },
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    for (const spinner of spinners) spinner.kill('SIGKILL');
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
