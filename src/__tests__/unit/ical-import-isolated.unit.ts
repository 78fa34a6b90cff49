import {expect} from '@loopback/testlab';
import {execFileSync} from 'node:child_process';
import path from 'node:path';
import {NotICalendarError} from '../../calendars/ical-dates';
import {
  importAllDayDatesIsolated,
  importInWorker,
  ImportStartTooSlowError,
  ImportTooSlowError,
} from '../../calendars/ical-import-isolated';
import {packagesLoadedBy} from '../fixtures/loaded-packages';

const NOW = new Date('2026-11-25T00:00:00Z');

function oneEvent(lines: string[]): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//review//hostile//EN',
    'BEGIN:VEVENT',
    'UID:hostile@example.org',
    ...lines,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}

const WORKERS = path.resolve(__dirname, '../fixtures/import-workers');
/** The real import worker, two seconds late to start. */
const SLOW_START_WORKER = path.join(WORKERS, 'slow-start-worker.js');
const NEVER_STARTS_WORKER = path.join(WORKERS, 'never-starts-worker.js');
const STARTED_AGAIN_WORKER = path.join(WORKERS, 'started-again-worker.js');
const GARBLED_WORKER = path.join(WORKERS, 'garbled-worker.js');

const YEARLY = oneEvent(['DTSTART;VALUE=DATE:20201225', 'RRULE:FREQ=YEARLY']);
/** ical.js never returns from next() for it. */
const ENDLESS = oneEvent([
  'DTSTART;VALUE=DATE:00010101',
  'RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
]);
const FIVE_CHRISTMASES = [
  '2026-12-25',
  '2027-12-25',
  '2028-12-25',
  '2029-12-25',
  '2030-12-25',
];

function jobOf(text: string) {
  return {text, nowMs: NOW.getTime(), maxDates: 20_000};
}

async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return await promise;
  } catch (error) {
    return error;
  }
}

describe('iCalendar import in a worker', () => {
  // ical.js never returns from next() for a daily rule no day satisfies:
  // on the main thread this 200-byte body hung the whole service.
  it('refuses a rule ical.js never finishes instead of hanging the process', async () => {
    const result = await outcome(
      importAllDayDatesIsolated(ENDLESS, NOW, 20_000, 300),
    );
    expect(result).to.be.instanceOf(ImportTooSlowError);
  });

  it('gives the dates of a readable file', async () => {
    const result = await importAllDayDatesIsolated(YEARLY, NOW, 20_000);
    expect(result.dates).to.deepEqual(FIVE_CHRISTMASES);
  });

  it('passes the parser refusal back as its own class', async () => {
    const result = await outcome(
      importAllDayDatesIsolated('hello', NOW, 20_000),
    );
    expect(result).to.be.instanceOf(NotICalendarError);
  });

  // A worker thread loads its modules before it parses: seconds on a loaded
  // machine. Counted against the budget, it made a readable file a 422
  // "could not be expanded within 5000 ms; check their RRULEs".
  it('counts the parse against the budget, not a worker slow to start', async () => {
    const started = Date.now();
    const result = await importInWorker(SLOW_START_WORKER, jobOf(YEARLY), {
      budgetMs: 1_500,
      startLimitMs: 30_000,
    });
    expect(result.dates).to.deepEqual(FIVE_CHRISTMASES);
    expect(Date.now() - started).to.be.greaterThanOrEqual(2_000);
  });

  it('still ends a rule ical.js never finishes one budget after a slow start', async () => {
    const started = Date.now();
    const result = await outcome(
      importInWorker(SLOW_START_WORKER, jobOf(ENDLESS), {
        budgetMs: 300,
        startLimitMs: 30_000,
      }),
    );
    expect(result).to.be.instanceOf(ImportTooSlowError);
    expect((result as Error).message).to.match(/within 300 ms/);
    expect(Date.now() - started).to.be.greaterThanOrEqual(2_300);
  });

  it('refuses as busy, not as a bad file, when the worker does not start in time', async () => {
    const started = Date.now();
    const result = await outcome(
      importInWorker(NEVER_STARTS_WORKER, jobOf(YEARLY), {
        budgetMs: 5_000,
        startLimitMs: 300,
      }),
    );
    expect(result).to.be.instanceOf(ImportStartTooSlowError);
    expect((result as Error).message).to.match(
      /too busy to start a calendar import .*within 300 ms/,
    );
    expect(Date.now() - started).to.be.lessThan(5_000);
  });

  it('gives the parse one budget however often the worker says it started', async () => {
    const result = await outcome(
      importInWorker(STARTED_AGAIN_WORKER, jobOf(YEARLY), {
        budgetMs: 300,
        startLimitMs: 30_000,
      }),
    );
    expect(result).to.be.instanceOf(ImportTooSlowError);
  });

  it('refuses an answer that is no object instead of throwing in the listener', async () => {
    const result = await outcome(
      importInWorker(GARBLED_WORKER, jobOf(YEARLY), {
        budgetMs: 5_000,
        startLimitMs: 30_000,
      }),
    );
    expect(result).to.be.instanceOf(Error);
    expect((result as Error).message).to.match(/nothing readable/);
  });

  // What the worker loads is its start-up time: the date check once came
  // with the validation rules and, through them, all of LoopBack (about
  // 1,100 modules, 0.7 s on an idle machine).
  it('loads no package but ical.js (and the TypeScript helpers) for the parse the worker runs', async () => {
    const parser = path.resolve(__dirname, '../../calendars/ical-dates.js');
    const packages = await packagesLoadedBy(env =>
      execFileSync(
        process.execPath,
        ['-e', `require(${JSON.stringify(parser)})`],
        {
          env: {...process.env, ...env},
        },
      ),
    );
    expect(packages).to.deepEqual(['ical.js', 'tslib']);
  });
});
