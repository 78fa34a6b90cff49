import type {Pool, PoolClient} from 'pg';
import type {PoolMode} from '../database/pg-pool';
import {executionKey} from '../scheduling/execution-key';
import type {TaskMessage, TaskSource} from '../queue/task-message';
import type {DueRun} from './due-evaluator';

export interface Claim extends TaskSource {
  execution_id: number;
  execution_key: string;
  /** The minute the run is for (a one-time run: the minute of its date_time). */
  slot: Date;
  /** The stored message of a run an operator started (outbox); else built from the scheduler. */
  payload?: TaskMessage | null;
  one_time: boolean;
  /** Claimed as skipped (overlap policy skip, or a calendar): not published. */
  skipped?: boolean;
  /** Skipped because a calendar says so (the ledger's reason names it). */
  skipped_by_calendar?: boolean;
}

/** Why a run of an overlap_policy skip scheduler was not sent. */
export const OVERLAP_SKIP_REASON =
  'overlap policy skip: an earlier run of this scheduler was still claimed, published, running or retrying';

/**
 * Runs claimed per statement where the producer's sessions run without JIT
 * (see createProducerPool): one statement for a whole minute of 10,000 runs.
 * Two statements of 5,000 wrote their rows over 100–130 ms against 73–77 ms
 * for one (a fresh table, 2 cores), most of the difference the wait between
 * them.
 */
export const CLAIM_BATCH = 10_000;

/**
 * Runs claimed per statement behind a transaction pooler, where no session
 * setting travels and JIT stays as the server has it: a tick's first minute
 * of 5,000 was estimated at 57,000–94,000, under `jit_above_cost`'s default
 * of 100,000; one of 10,000 (about 115,000) was compiled first and answered
 * in 184–353 ms against 131–145 ms without JIT. A catch-up's later minutes,
 * whose overlap check leaves out the runs claimed before them, are
 * estimated higher still: docs/deployment.md has the role turn JIT off.
 */
export const CLAIM_BATCH_UNDER_POOLER = 5_000;

/** The claim batch for the producer's pool mode. */
export function claimBatchSize(poolMode: PoolMode): number {
  return poolMode === 'transaction' ? CLAIM_BATCH_UNDER_POOLER : CLAIM_BATCH;
}

/**
 * Claims due runs with one INSERT ... ON CONFLICT DO NOTHING per batch.
 * A conflict means another producer owns the run: it is not returned. Only
 * schedulers still active at claim time are claimed (one deleted or disabled
 * since loading is skipped instead of failing the batch). `executed_at` is
 * the database's clock when the row was written, not the tick's: the ledger
 * says when the claim really happened, whatever the host's clock says.
 */
export async function claimRuns(
  db: Pool | PoolClient,
  runs: DueRun[],
  containerId: string,
  batchSize = CLAIM_BATCH,
): Promise<Claim[]> {
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new RangeError(
      `claim batch size ${batchSize} is no positive integer`,
    );
  }
  const claims: Claim[] = [];
  // Runs this call claimed for its earlier minutes (a catch-up): not earlier
  // runs for the overlap check, which sees what was there before the tick, as
  // one statement for every minute would. Within a minute a scheduler is in
  // one batch only, so a one-minute tick sends an empty list.
  const claimedHere: number[] = [];
  for (const [slot, ofSlot] of bySlot(runs)) {
    const claimedForSlot: number[] = [];
    const key = executionKey(slot);
    const send = (start: number) => {
      const batch = ofSlot.slice(start, start + batchSize);
      return db.query<Claim>(CLAIM_STATEMENT, [
        batch.map(run => run.schedulerId),
        key,
        slot,
        containerId,
        OVERLAP_SKIP_REASON,
        batch.map(run => run.skipReason ?? null),
        claimedHere,
      ]);
    };
    let answer = send(0);
    for (let start = 0; start < ofSlot.length; start += batchSize) {
      const {rows} = await answer;
      // The next batch goes out before this one's rows are turned into
      // claims: the database writes while this process reads. One at a
      // time still: batches side by side gained nothing, and a failed one
      // leaves none behind it in flight.
      if (start + batchSize < ofSlot.length) answer = send(start + batchSize);
      for (const row of rows) {
        if (!row.skipped) claimedForSlot.push(Number(row.execution_id));
        claims.push({
          ...row,
          // bigint ids arrive as strings; they stay far below 2^53.
          execution_id: Number(row.execution_id),
          execution_key: key,
          slot,
        });
      }
    }
    claimedHere.push(...claimedForSlot);
  }
  return claims;
}

/**
 * Runs grouped by their minute, in the order the minutes first appear, each
 * minute's in scheduler id order: producers racing for the same runs (a
 * lease taken over from a slow peer, the late-activation look back) then
 * insert their keys in one order, and cannot deadlock on each other's
 * uncommitted rows (review: two producers whose candidates came in
 * different orders, a changed row read again goes last, deadlocked).
 */
function bySlot(runs: DueRun[]): Map<Date, DueRun[]> {
  const groups = new Map<number, {slot: Date; runs: DueRun[]}>();
  for (const run of runs) {
    const time = run.slot.getTime();
    let group = groups.get(time);
    if (!group) groups.set(time, (group = {slot: run.slot, runs: []}));
    group.runs.push(run);
  }
  return new Map(
    [...groups.values()].map(g => [
      g.slot,
      g.runs.sort((a, b) => a.schedulerId - b.schedulerId),
    ]),
  );
}

/**
 * One minute's claims: $1 scheduler ids, $2 the execution key, $3 the slot,
 * $4 the container, $5 the overlap skip reason, $6 each run's calendar skip
 * reason (or null), $7 the runs claimed by the tick's earlier statements
 * (left out of the overlap check). The slot and key are one value for the
 * whole batch, not a column of it: less to send, parse and return.
 */
const CLAIM_STATEMENT = `
  WITH wanted AS (
    SELECT * FROM unnest($1::int[], $6::text[]) AS w(scheduler_id, calendar_reason)
  ), claimed AS (
    INSERT INTO scheduler_execution
      (scheduler_id, execution_key, slot, executed_at, container_id,
       status, status_reason)
    SELECT w.scheduler_id, $2, $3, clock_timestamp(), $4,
           CASE WHEN w.calendar_reason IS NOT NULL OR o.still_going
                THEN 'skipped' ELSE 'claimed' END,
           -- A calendar's skip is the reason even while a run is going.
           COALESCE(w.calendar_reason, CASE WHEN o.still_going THEN $5 END)
      FROM wanted w
      JOIN scheduler s ON s.id = w.scheduler_id AND s.status AND NOT s.stay_alive
      CROSS JOIN LATERAL (
        SELECT s.overlap_policy = 'skip' AND EXISTS (
          SELECT 1 FROM scheduler_execution e
           WHERE e.scheduler_id = s.id
             AND e.status IN ('claimed', 'published', 'running', 'retrying')
             AND e.id <> ALL($7::bigint[])
        ) AS still_going
      ) o
    ON CONFLICT (scheduler_id, execution_key) DO NOTHING
    RETURNING id, scheduler_id, status, status_reason
  )
  SELECT c.id AS execution_id, c.scheduler_id,
         s.report_id, s.worker_id, s.reminder_id, s.http_target_id, s.params,
         s.date_time IS NOT NULL AS one_time,
         c.status = 'skipped' AS skipped,
         c.status = 'skipped' AND c.status_reason IS DISTINCT FROM $5
           AS skipped_by_calendar
    FROM claimed c JOIN scheduler s ON s.id = c.scheduler_id`;
