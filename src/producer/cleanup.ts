import {performance} from 'node:perf_hooks';
import type {Pool} from 'pg';

export const RETENTION_DAYS = 30;
const CLEANUP_HOUR = 3;
const DELETE_BATCH = 5_000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The local date (YYYY-MM-DD) and hour of `instant` in `timeZone`. */
function localDateAndHour(instant: Date, timeZone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
    })
      .formatToParts(instant)
      .map(part => [part.type, part.value]),
  );
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    hour: Number(parts.hour),
  };
}

/**
 * Takes today's cleanup if it is 03:00 or later in `timeZone` and no
 * instance has run it today: one atomic upsert decides, so exactly one
 * producer wins per day. A producer that was down at 03:00 runs it later.
 */
export async function claimDailyCleanup(
  pool: Pool,
  now: Date,
  timeZone: string,
): Promise<boolean> {
  const {date, hour} = localDateAndHour(now, timeZone);
  if (hour < CLEANUP_HOUR) return false;
  const {rowCount} = await pool.query(
    `INSERT INTO producer_state (name, last_run_on) VALUES ('cleanup', $1)
     ON CONFLICT (name) DO UPDATE
       SET last_run_on = EXCLUDED.last_run_on, updated_at = now()
       WHERE producer_state.last_run_on IS NULL
          OR producer_state.last_run_on < EXCLUDED.last_run_on
     RETURNING name`,
    [date],
  );
  return rowCount === 1;
}

export interface DeleteBudget {
  /** Stop starting batches once this much time has been spent. */
  budgetMs: number;
  batchSize?: number;
  /** Monotonic milliseconds; injectable so tests can spend the budget. */
  elapsedClock?: () => number;
}

export interface DeleteResult {
  deleted: number;
  /** False when the budget ran out with old rows left. */
  finished: boolean;
}

/** The instant before which executions are past retention at `now`. */
export function retentionCutoff(now: Date): Date {
  return new Date(now.getTime() - RETENTION_DAYS * DAY_MS);
}

/**
 * Deletes executions claimed before `cutoff`, in short batches (each its own
 * statement, so no lock is held long) until none is left or the budget is
 * spent; the caller resumes an unfinished run later.
 */
export async function deleteOldExecutions(
  pool: Pool,
  cutoff: Date,
  budget: DeleteBudget,
): Promise<DeleteResult> {
  const elapsed = budget.elapsedClock ?? (() => performance.now());
  const batchSize = budget.batchSize ?? DELETE_BATCH;
  const started = elapsed();
  let deleted = 0;
  for (;;) {
    const {rowCount} = await pool.query(
      `DELETE FROM scheduler_execution
        WHERE id IN (SELECT id FROM scheduler_execution
                      WHERE executed_at < $1 LIMIT ${batchSize})`,
      [cutoff],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize) return {deleted, finished: true};
    if (elapsed() - started >= budget.budgetMs) {
      return {deleted, finished: false};
    }
  }
}

/**
 * Slot leases older than a day: no producer plans a slot that old (the
 * catch-up window is at most a day), so they only take space.
 */
export async function deleteOldSlotLeases(
  pool: Pool,
  now: Date,
): Promise<number> {
  const {rowCount} = await pool.query(
    `DELETE FROM producer_slot_lease WHERE slot < $1`,
    [new Date(now.getTime() - DAY_MS)],
  );
  return rowCount ?? 0;
}

/**
 * Finished webhook deliveries claimed before `cutoff` (the run ledger's
 * retention): the delivery log keeps what the ledger keeps. Pending and
 * retrying ones stay, whatever their age.
 */
export async function deleteOldWebhookDeliveries(
  pool: Pool,
  cutoff: Date,
  batchSize = DELETE_BATCH,
): Promise<number> {
  let deleted = 0;
  // Short batches, each its own statement: no lock is held long.
  for (;;) {
    const {rowCount} = await pool.query(
      `DELETE FROM webhook_delivery
        WHERE id IN (SELECT id FROM webhook_delivery
                      WHERE created_at < $1
                        AND status IN ('succeeded', 'failed', 'cancelled')
                      LIMIT ${batchSize})`,
      [cutoff],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize) return deleted;
  }
}
