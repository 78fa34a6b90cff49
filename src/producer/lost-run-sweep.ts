import type {Pool, PoolClient} from 'pg';
import {
  CLOCK_SKEW_ALLOWANCE_MS,
  longestAttemptMs,
} from '../consumer/attempt-bound';
import {storeFailedTask} from '../database/failed-task-store';
import {MAX_DB_STATEMENT_TIMEOUT_MS} from '../config';
import type {Logger} from '../logging/logger';
import {taskMessageFor, TaskMessage, TaskSource} from '../queue/task-message';
import type {TaskPublisher} from '../queue/task-publisher';
import {RetrySettings, retryTiers} from '../queue/topology';
import {LEDGER_HORIZON, recordLedgerEpoch} from './ledger-epoch';

/** Copies sent for one run at most; a run lost once more is failed. */
export const LOST_RUN_RESENDS = 3;

const DEFAULT_BATCH = 500;

/**
 * How long a published or retrying run may show no activity before it
 * counts as lost: the longest retry delay, then the grace
 * (CRON_LOST_RUN_GRACE_MS; by default the broker's consumer timeout, the
 * longest a delivery can stay unacknowledged, its consumer dead or stuck,
 * before the broker takes it back).
 */
export function lostRunAfterMs(retry: RetrySettings, graceMs: number): number {
  const longestDelay = Math.max(
    0,
    ...retryTiers(retry).map(tier => tier.delayMs),
  );
  return longestDelay + graceMs;
}

/**
 * How long a running run may show no activity before it counts as left
 * without an outcome: `lostAfterMs` (a retry whose running mark was not
 * replaced waits in a delay queue at most that long), then the longest an
 * attempt can run with a live consumer, then the clock skew a consumer host
 * may have. The attempt's bound takes the largest statement timeout any
 * consumer may have, not this producer's: the setting is each host's own.
 * It never shrinks below that bound, however small the grace.
 */
export function stuckRunAfterMs(lostAfterMs: number): number {
  return (
    lostAfterMs +
    longestAttemptMs(MAX_DB_STATEMENT_TIMEOUT_MS) +
    CLOCK_SKEW_ALLOWANCE_MS
  );
}

/** Which work queues hold ready messages: a run of theirs may only be waiting. */
export interface BusyQueues {
  /** cron_scheduler: every copy and every original passes through it. */
  tasks: boolean;
  /** cron_scheduler_reports. */
  reports: boolean;
  /** cron_scheduler_http. */
  http: boolean;
}

export interface LostRunCounts {
  /** Copies sent (and confirmed) for runs whose message was lost. */
  resent: number;
  /** Runs failed: lost again after their last copy, or unsure after a database crash. */
  failed: number;
  /** Cron runs never started whose minute left the catch-up window: skipped, not sent late. */
  skipped: number;
  /** Runs left running with no outcome long after any attempt could have ended: failed. */
  stuck: number;
}

export interface LostRunSweepResult extends LostRunCounts {
  /** Candidates left alone this pass: their queue held ready messages. */
  deferred: number;
}

export interface LostRunSweepOptions {
  /** No activity for this long (compared with the database's clock) makes a run a candidate. */
  lostAfterMs: number;
  /** The same for a running run; stuckRunAfterMs(lostAfterMs) unless given (tests). */
  stuckAfterMs?: number;
  /** The work queues' state; null when it cannot be read (nothing is done then). */
  busyQueues: () => Promise<BusyQueues | null>;
  /** The oldest minute the producer still fires (its catch-up window). */
  staleBefore: () => Date;
  maxResends?: number;
  batchSize?: number;
  /** Told what each batch did, once it is done (the metrics). */
  onBatch?: (counts: LostRunCounts) => void;
}

interface LostRun extends TaskSource {
  execution_id: string;
  execution_key: string;
  status: 'published' | 'retrying' | 'running';
  resent: number;
  resent_confirmed: number;
  last_retry_count: number;
  attempts: number;
  never_fired_late: boolean;
  payload: TaskMessage | null;
  idle_minutes: number;
  unsure: boolean;
  /** No stored message, and the scheduler was written after the claim. */
  edited_since_claim: boolean;
  /** Why its consumer parked it, when it did (its failed mark then was lost). */
  parked_reason: string | null;
}

/** The last thing that happened to a run, as the ledger recorded it. */
const LAST_ACTIVITY = `GREATEST(e.executed_at, e.published_at, e.started_at, e.finished_at, e.resent_at)`;

/**
 * The scheduler was written after the run was claimed (`updated_at`, kept by
 * a trigger on every write): a run without a stored message no longer has a
 * known task.
 */
const SCHEDULER_EDITED_SINCE_CLAIM = 's.updated_at > e.executed_at';

/**
 * Where a run's message waits when it is not lost: its task type's queue.
 * A run without a stored message (a cron run before its first attempt) has
 * its scheduler's type, unless the scheduler was edited since the claim:
 * then its type is unknown and any busy work queue holds it.
 */
const QUEUE_OF = `COALESCE(e.payload->>'type', CASE
    WHEN ${SCHEDULER_EDITED_SINCE_CLAIM} THEN 'unknown'
    WHEN s.report_id IS NOT NULL THEN 'report'
    WHEN s.http_target_id IS NOT NULL THEN 'http' ELSE 'task' END)`;

/**
 * Candidates: runs left published or retrying with no activity for
 * `lostAfterMs` ($1), or running with none for `stuckAfterMs` (the
 * parameter named), whose scheduler is not stay-alive (the supervisor runs
 * those).
 */
const candidates = (stuckAfterMs: string) => `
  FROM scheduler_execution e
  JOIN scheduler s ON s.id = e.scheduler_id
 WHERE e.status IN ('published', 'retrying', 'running')
   AND ${LAST_ACTIVITY} < now() - make_interval(secs =>
         CASE WHEN e.status = 'running' THEN ${stuckAfterMs}::float8 ELSE $1::float8 END / 1000)
   AND NOT s.stay_alive`;

const stuckAfterMsOf = (options: LostRunSweepOptions) =>
  options.stuckAfterMs ?? stuckRunAfterMs(options.lostAfterMs);

/**
 * Recovers runs whose message the broker lost: a delay queue's dead-letter
 * worker stranded when its target queue's leader moved (rabbitmq-server
 * #12625), a purge, a node lost with its data. Such a run stays published
 * or retrying for ever with nothing to run it, and under `overlap_policy:
 * skip` holds back every later run of its scheduler.
 *
 * A candidate whose queue (see BusyQueues) holds no ready message is
 * counted as copy k+1 (`resent`, `resent_at` by the database's clock) and
 * committed first; then copy k+1 is published (header `x-resent`) at the
 * retry it was lost at. The consumer's start rule refuses every delivery
 * older than the run's count, so whatever happens between the two (a
 * producer killed, a lost confirm), no two copies can both start it: at
 * worst a number is used up and the next pass sends the next one. After
 * `maxResends` copies the broker confirmed, a run lost again is failed and
 * kept in `failed_task` (re-drive, failure notice). Two kinds are not sent
 * again:
 *  - a cron run never started whose minute has left the catch-up window is
 *    skipped, as the claim sweeper skips an unsent one (never fired late);
 *  - a run claimed before the ledger horizon (the last crash recovery,
 *    failover or restore, see LEDGER_HORIZON) is failed: the ledger's marks
 *    commit asynchronously, so the event may have taken back the marks of
 *    a delivery that ran it to the end. Its claim time is the database's,
 *    so no host clock can move it past the horizon.
 * A run left running (its consumer gave up recording the outcome, or died
 * and its unacknowledged message was lost) is failed, never sent again:
 * its task may have run to the end. Failing it shows it to operators
 * (failed_task, re-drive, failure notice) and frees an overlap-skip
 * scheduler whose later runs it would hold back for ever.
 * Rows are locked with SKIP LOCKED and each pass walks them in id order, so
 * producers sweep side by side and no run is handled twice in one pass.
 */
export async function sweepLostRuns(
  pool: Pool,
  publisher: TaskPublisher,
  logger: Logger,
  options: LostRunSweepOptions,
): Promise<LostRunSweepResult> {
  const result: LostRunSweepResult = {
    resent: 0,
    failed: 0,
    skipped: 0,
    stuck: 0,
    deferred: 0,
  };
  if (await recordLedgerEpoch(pool)) {
    logger.warn(
      'The run ledger changed hands (another cluster, timeline or table): runs claimed before now are not sent again',
      {component: 'lost-run-sweep'},
    );
  }
  const {rows} = await pool.query<{queue: string; n: number}>(
    `SELECT ${QUEUE_OF} AS queue, count(*)::int AS n ${candidates('$2')} GROUP BY 1`,
    [options.lostAfterMs, stuckAfterMsOf(options)],
  );
  if (rows.length === 0) return result;
  const busy = await options.busyQueues();
  const held = (queue: string) =>
    busy === null ||
    busy.tasks ||
    ((queue === 'report' || queue === 'unknown') && busy.reports) ||
    ((queue === 'http' || queue === 'unknown') && busy.http);
  result.deferred = rows
    .filter(row => held(row.queue))
    .reduce((sum, row) => sum + row.n, 0);
  if (result.deferred > 0) {
    logger.info(
      'Runs without activity left alone: their queue holds ready messages',
      {component: 'lost-run-sweep', runs: result.deferred},
    );
  }
  if (busy === null || busy.tasks) return result;
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  let afterId = '0';
  for (;;) {
    const batch = await claimBatch(pool, logger, options, busy, {
      afterId,
      batchSize,
    });
    // What the batch committed counts even if its copies fail to go out.
    options.onBatch?.({
      resent: 0,
      failed: batch.failed,
      skipped: batch.skipped,
      stuck: batch.stuck,
    });
    result.failed += batch.failed;
    result.skipped += batch.skipped;
    result.stuck += batch.stuck;
    const resent = await publishCopies(pool, publisher, logger, batch.copies);
    options.onBatch?.({resent, failed: 0, skipped: 0, stuck: 0});
    result.resent += resent;
    // Stop when nothing is left, or when the broker took none (it is down).
    if (batch.found < batchSize) break;
    if (batch.copies.length > 0 && resent === 0) break;
    afterId = batch.lastId;
  }
  return result;
}

interface Copy {
  run: LostRun;
  retryCount: number;
  resent: number;
}

/**
 * One batch, in one transaction: each candidate is counted as its next
 * copy, failed or skipped. Copies are published after the commit.
 */
async function claimBatch(
  pool: Pool,
  logger: Logger,
  options: LostRunSweepOptions,
  busy: BusyQueues,
  page: {afterId: string; batchSize: number},
): Promise<{
  found: number;
  lastId: string;
  copies: Copy[];
  failed: number;
  skipped: number;
  stuck: number;
}> {
  const maxResends = options.maxResends ?? LOST_RUN_RESENDS;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // The scheduler is share-locked without waiting: a delete holding it
    // while it waits for the run would deadlock with the failed task stored.
    const {rows} = await client.query<LostRun>(
      `SELECT e.id AS execution_id, e.scheduler_id, e.execution_key, e.payload,
              e.status, e.resent, e.resent_confirmed, e.attempts,
              COALESCE(e.last_retry_count, 0) AS last_retry_count,
              s.report_id, s.worker_id, s.reminder_id, s.http_target_id, s.params,
              floor(extract(epoch FROM now() - ${LAST_ACTIVITY}) / 60)::int AS idle_minutes,
              COALESCE(e.executed_at < (${LEDGER_HORIZON}), false) AS unsure,
              (e.payload IS NULL AND ${SCHEDULER_EDITED_SINCE_CLAIM}) AS edited_since_claim,
              (SELECT f.failed_reason FROM failed_task f
                WHERE f.execution_id = e.id) AS parked_reason,
              (e.trigger = 'schedule' AND e.execution_key LIKE 'cron-%'
                AND e.attempts = 0 AND e.slot < $3) AS never_fired_late
         ${candidates('$6')}
          AND e.id > $2::bigint
          AND NOT (${QUEUE_OF} IN ('report', 'unknown') AND $4::boolean)
          AND NOT (${QUEUE_OF} IN ('http', 'unknown') AND $5::boolean)
        ORDER BY e.id
        LIMIT ${page.batchSize}
          FOR UPDATE OF e SKIP LOCKED
          FOR KEY SHARE OF s SKIP LOCKED`,
      [
        options.lostAfterMs,
        page.afterId,
        options.staleBefore(),
        busy.reports,
        busy.http,
        stuckAfterMsOf(options),
      ],
    );
    const copies: Copy[] = [];
    let failed = 0;
    let skipped = 0;
    let stuck = 0;
    for (const run of rows) {
      if (run.status === 'running' && run.parked_reason !== null) {
        await markParked(client, logger, run, run.parked_reason);
        stuck++;
      } else if (run.status === 'running') {
        await fail(client, logger, run, noOutcomeReason(run));
        stuck++;
      } else if (run.unsure) {
        await fail(client, logger, run, unsureReason(run));
        failed++;
      } else if (run.never_fired_late) {
        await skip(client, logger, run);
        skipped++;
      } else if (run.resent_confirmed >= maxResends) {
        await fail(client, logger, run, lostAgainReason(run));
        failed++;
      } else {
        copies.push(await countCopy(client, run, maxResends));
      }
    }
    await client.query('COMMIT');
    return {
      found: rows.length,
      lastId: rows.at(-1)?.execution_id ?? page.afterId,
      copies,
      failed,
      skipped,
      stuck,
    };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

const messageOf = (run: LostRun): TaskMessage =>
  run.payload ?? taskMessageFor(run);

/**
 * The retry the run was lost at: the next one after a failed attempt
 * (retrying), the same one for a message never started or requeued by a
 * shutdown (published), or the attempt left without an outcome (running).
 */
const retryCountOf = (run: LostRun): number =>
  run.status === 'retrying' ? run.last_retry_count + 1 : run.last_retry_count;

const logFields = (run: LostRun) => ({
  component: 'lost-run-sweep',
  execution_id: Number(run.execution_id),
  scheduler_id: run.scheduler_id,
  execution_key: run.execution_key,
  status: run.status,
  idle_minutes: run.idle_minutes,
});

/** Counts the run's next copy, before it exists: no copy can outrun its count. */
async function countCopy(
  client: PoolClient,
  run: LostRun,
  maxResends: number,
): Promise<Copy> {
  const resent = run.resent + 1;
  await client.query(
    `UPDATE scheduler_execution
        SET resent = $2::int, resent_at = now(),
            status_reason = 'sent again as copy ' || $2::int || ' ('
              || resent_confirmed || ' of ' || $3::int || ' confirmed before it): no sign of its message for '
              || $4::int || ' min'
      WHERE id = $1`,
    [run.execution_id, resent, maxResends, run.idle_minutes],
  );
  return {run, retryCount: retryCountOf(run), resent};
}

/**
 * Publishes the counted copies and records which the broker confirmed:
 * only those count towards giving up, so a broker that takes none (down,
 * flapping) never gets a run failed for copies it was never sent.
 */
async function publishCopies(
  pool: Pool,
  publisher: TaskPublisher,
  logger: Logger,
  copies: Copy[],
): Promise<number> {
  if (copies.length === 0) return 0;
  const confirmed = await publisher.publish(
    copies.map(({run, retryCount, resent}) => ({
      executionId: Number(run.execution_id),
      executionKey: run.execution_key,
      message: messageOf(run),
      resend: {retryCount, resent},
    })),
  );
  for (const {run, retryCount, resent} of copies) {
    const fields = {...logFields(run), retry_count: retryCount, resent};
    if (confirmed.has(Number(run.execution_id))) {
      logger.warn('Run lost by the broker; sent again', fields);
    } else {
      logger.warn(
        'Copy of a lost run not confirmed by the broker; the next pass sends another',
        fields,
      );
    }
  }
  if (confirmed.size > 0) {
    // The copies are out: a failure here costs only the count towards
    // giving up (one more copy may go out), never the copies' report.
    await pool
      .query(
        `UPDATE scheduler_execution SET resent_confirmed = resent_confirmed + 1
          WHERE id = ANY($1::bigint[])`,
        [[...confirmed.keys()]],
      )
      .catch((error: Error) =>
        logger.warn('Could not record which lost-run copies were confirmed', {
          component: 'lost-run-sweep',
          error: error.message,
          runs: confirmed.size,
        }),
      );
  }
  return confirmed.size;
}

const lostAgainReason = (run: LostRun) =>
  `lost: no sign of its message for ${run.idle_minutes} min after ${run.resent_confirmed} copies sent again; given up`;

const noOutcomeReason = (run: LostRun) =>
  `outcome unknown: running for ${run.idle_minutes} min with no outcome recorded, longer than any attempt can take (its consumer gave up recording the outcome, or died and its message was lost); not sent again, re-drive it if it did not run`;

/** Said of a failed run kept for re-drive whose task is known only from its scheduler, edited since. */
const EDITED_SINCE_CLAIM =
  '; its scheduler was edited after the run was claimed, so the task kept for re-drive is the scheduler as it is now';

const unsureReason = (run: LostRun) =>
  `lost or already run: no sign of its message for ${run.idle_minutes} min, and the database crashed, failed over or was restored since the run was claimed (marks may be missing); not sent again, re-drive it if it did not run`;

/** The ledger's failed mark, with the reason as its error. */
async function markFailed(
  client: PoolClient,
  run: LostRun,
  reason: string,
): Promise<void> {
  await client.query(
    `UPDATE scheduler_execution
        SET status = 'failed', finished_at = now(), duration_ms = NULL,
            last_error = $2, status_reason = $2
      WHERE id = $1`,
    [run.execution_id, reason],
  );
}

/** A run that is not sent again: failed, and kept for re-drive like a task that used its retries. */
async function fail(
  client: PoolClient,
  logger: Logger,
  run: LostRun,
  givenReason: string,
): Promise<void> {
  const reason = run.edited_since_claim
    ? givenReason + EDITED_SINCE_CLAIM
    : givenReason;
  const failedAt = new Date();
  await markFailed(client, run, reason);
  const message = messageOf(run);
  const retryCount = retryCountOf(run);
  await storeFailedTask(client, {
    executionId: Number(run.execution_id),
    schedulerId: message.scheduler_id,
    type: message.type,
    taskId: message.id,
    paramsScheduler: message.params_scheduler,
    payload: {
      ...message,
      failed_at: failedAt.toISOString(),
      failed_reason: reason,
      retry_count: retryCount,
    },
    failedReason: reason,
    retryCount,
    failedAt,
  });
  logger.error('PERMANENTLY FAILED TASK', {
    ...logFields(run),
    type: message.type,
    id: message.id,
    retry_count: retryCount,
    failed_at: failedAt.toISOString(),
    failed_reason: reason,
  });
}

/**
 * A run left running that its consumer had parked (its last failure, a
 * crash loop): its outcome is known and kept in failed_task, only the
 * ledger's failed mark was lost. The run gets that mark, with the parked
 * reason; nothing is stored or announced twice.
 */
async function markParked(
  client: PoolClient,
  logger: Logger,
  run: LostRun,
  reason: string,
): Promise<void> {
  await markFailed(client, run, reason);
  logger.warn(
    'Run left running although its consumer parked it; marked failed as parked',
    {...logFields(run), failed_reason: reason},
  );
}

/** A cron run never started whose minute is past the catch-up window: not fired late. */
async function skip(
  client: PoolClient,
  logger: Logger,
  run: LostRun,
): Promise<void> {
  const reason =
    'not sent again: its message was lost and its minute is older than the catch-up window';
  await client.query(
    `UPDATE scheduler_execution SET status = 'skipped', status_reason = $2
      WHERE id = $1`,
    [run.execution_id, reason],
  );
  logger.warn(
    'Lost run skipped: its minute is older than the catch-up window',
    {
      ...logFields(run),
      status_reason: reason,
    },
  );
}
