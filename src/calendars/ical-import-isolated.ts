import path from 'node:path';
import {Worker} from 'node:worker_threads';
import {ImportSlots} from './import-slots';
import {
  ImportedDates,
  NotICalendarError,
  TooManyDatesError,
} from './ical-dates';

/** Imports that may run at once (each a worker thread); others wait. */
export const IMPORT_CONCURRENCY = 2;
/** Imports that may wait for a slot; the next is refused (503, Retry-After). */
export const MAX_WAITING_IMPORTS = 4;
/** Imports one user may have running or waiting; the next is theirs to wait for (429). */
export const MAX_IMPORTS_PER_USER = 2;
const slots = new ImportSlots(
  IMPORT_CONCURRENCY,
  MAX_WAITING_IMPORTS,
  MAX_IMPORTS_PER_USER,
);

/** How long one import may parse before the file is refused. */
export const IMPORT_BUDGET_MS = 5_000;

/**
 * How long a worker thread may take to start (load ical.js) before the
 * import is refused as the server being too busy (503, Retry-After).
 */
export const IMPORT_START_LIMIT_MS = 15_000;

const IMPORT_WORKER = path.join(__dirname, 'ical-import-worker.js');

/** The file kept ical.js busy past the budget (a rule no day satisfies, ...). */
export class ImportTooSlowError extends Error {
  override name = 'ImportTooSlowError';
}

/** The worker thread did not start in time: the machine is too busy now. */
export class ImportStartTooSlowError extends Error {
  override name = 'ImportStartTooSlowError';
  constructor(startLimitMs: number) {
    super(
      `the server is too busy to start a calendar import (no worker thread within ${startLimitMs} ms); try again in a few seconds`,
    );
  }
}

/** What the worker is given. */
export interface ImportJob {
  text: string;
  nowMs: number;
  maxDates: number;
}

export interface ImportLimits {
  /** The parse's time, from the worker's start (its modules loaded). */
  budgetMs: number;
  /** The worker's start, from its creation. */
  startLimitMs: number;
}

type Reply =
  | {started: true}
  | {ok: true; result: ImportedDates}
  | {ok: false; name: string; message: string};

/**
 * importAllDayDates in a worker thread, ended after `budgetMs` of parsing.
 * ical.js has rules it never finishes expanding
 * (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30 loops forever): on the main thread
 * one such 200-byte upload would stop every request and the producer's
 * tick. The parser's own refusals come back as the same error classes;
 * anything else is rethrown as it was.
 */
export function importAllDayDatesIsolated(
  text: string,
  now: Date,
  maxDates: number,
  budgetMs = IMPORT_BUDGET_MS,
  /** Who imports: one user's share of the slots is bounded. */
  owner?: string,
): Promise<ImportedDates> {
  // The budget starts when the worker does, not while waiting for a slot.
  return slots.run(
    () =>
      importInWorker(
        IMPORT_WORKER,
        {text, nowMs: now.getTime(), maxDates},
        {budgetMs, startLimitMs: IMPORT_START_LIMIT_MS},
      ),
    owner,
  );
}

/**
 * Runs `script` (the import worker; a test's stand-in for one) on `job`.
 * Two clocks: the worker's start (a new thread loading its modules takes
 * seconds on a loaded machine, and used to be counted as the file's), then
 * the parse, from the worker's `started` message.
 */
export function importInWorker(
  script: string,
  job: ImportJob,
  limits: ImportLimits,
): Promise<ImportedDates> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(script, {
      workerData: job,
      resourceLimits: {maxOldGenerationSizeMb: 256},
    });
    let settled = false;
    let timer: NodeJS.Timeout;
    const settle = (action: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      action();
      worker.terminate().catch(() => undefined);
    };
    timer = setTimeout(
      () =>
        settle(() => reject(new ImportStartTooSlowError(limits.startLimitMs))),
      limits.startLimitMs,
    );
    let started = false;
    worker.on('message', (reply: Reply) => {
      if (typeof reply !== 'object' || reply === null) {
        settle(() =>
          reject(
            new Error('the iCalendar import worker answered nothing readable'),
          ),
        );
        return;
      }
      if ('started' in reply) {
        // Once only: a second one must not give the parse a new budget.
        if (settled || started) return;
        started = true;
        clearTimeout(timer);
        timer = setTimeout(
          () =>
            settle(() =>
              reject(
                new ImportTooSlowError(
                  `the file's recurring events could not be expanded within ${limits.budgetMs} ms; check their RRULEs`,
                ),
              ),
            ),
          limits.budgetMs,
        );
        return;
      }
      settle(() => {
        if (reply.ok) return resolve(reply.result);
        const Known =
          reply.name === 'NotICalendarError'
            ? NotICalendarError
            : reply.name === 'TooManyDatesError'
              ? TooManyDatesError
              : Error;
        reject(new Known(reply.message));
      });
    });
    worker.once('error', error => settle(() => reject(error)));
    worker.once('exit', code =>
      settle(() =>
        reject(new Error(`the iCalendar import worker exited with ${code}`)),
      ),
    );
  });
}
