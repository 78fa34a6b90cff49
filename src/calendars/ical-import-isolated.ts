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

/** How long one import may run before the file is refused. */
export const IMPORT_BUDGET_MS = 5_000;

/** The file kept ical.js busy past the budget (a rule no day satisfies, ...). */
export class ImportTooSlowError extends Error {
  override name = 'ImportTooSlowError';
}

type Reply =
  | {ok: true; result: ImportedDates}
  | {ok: false; name: string; message: string};

/**
 * importAllDayDates in a worker thread, ended after `budgetMs`. ical.js has
 * rules it never finishes expanding (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30
 * loops forever): on the main thread one such 200-byte upload would stop
 * every request and the producer's tick. The parser's own refusals come back
 * as the same error classes; anything else is rethrown as it was.
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
  return slots.run(() => importInWorker(text, now, maxDates, budgetMs), owner);
}

function importInWorker(
  text: string,
  now: Date,
  maxDates: number,
  budgetMs: number,
): Promise<ImportedDates> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(path.join(__dirname, 'ical-import-worker.js'), {
      workerData: {text, nowMs: now.getTime(), maxDates},
      resourceLimits: {maxOldGenerationSizeMb: 256},
    });
    let settled = false;
    const settle = (action: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      action();
      worker.terminate().catch(() => undefined);
    };
    const timer = setTimeout(
      () =>
        settle(() =>
          reject(
            new ImportTooSlowError(
              `the file's recurring events could not be expanded within ${budgetMs} ms; check their RRULEs`,
            ),
          ),
        ),
      budgetMs,
    );
    worker.once('message', (reply: Reply) =>
      settle(() => {
        if (reply.ok) return resolve(reply.result);
        const Known =
          reply.name === 'NotICalendarError'
            ? NotICalendarError
            : reply.name === 'TooManyDatesError'
              ? TooManyDatesError
              : Error;
        reject(new Known(reply.message));
      }),
    );
    worker.once('error', error => settle(() => reject(error)));
    worker.once('exit', code =>
      settle(() =>
        reject(new Error(`the iCalendar import worker exited with ${code}`)),
      ),
    );
  });
}
