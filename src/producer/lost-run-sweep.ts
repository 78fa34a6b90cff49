import type {Pool, PoolClient} from 'pg';
import {storeFailedTask} from '../database/failed-task-store';
import type {Logger} from '../logging/logger';
import {taskMessageFor, TaskMessage, TaskSource} from '../queue/task-message';
import type {TaskPublisher} from '../queue/task-publisher';
import {RetrySettings, retryTiers} from '../queue/topology';

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

export interface LostRunSweepOptions {
  /** No activity for this long (by the database's clock) makes a run a candidate. */
  lostAfterMs: number;
  /**
   * True when no work queue holds a ready message. A run is only called
   * lost while they are empty: a message waiting behind a backlog is not.
   */
  workQueuesIdle: () => Promise<boolean>;
  maxResends?: number;
  batchSize?: number;
}

export interface LostRunSweepResult {
  /** Copies sent (and confirmed) for runs whose message was lost. */
  resent: number;
  /** Runs failed: lost again after their last copy. */
  failed: number;
  /** Candidates left alone this time: a work queue held ready messages. */
  deferred: number;
}

interface LostRun extends TaskSource {
  execution_id: string;
  execution_key: string;
  status: 'published' | 'retrying';
  resent: number;
  last_retry_count: number;
  payload: TaskMessage | null;
  idle_minutes: number;
}

/**
 * The candidates: runs left published or retrying with no activity (claim,
 * confirm, start, attempt's end, last copy) for `lostAfterMs`. Their
 * scheduler must not be stay-alive (the supervisor runs those), and is
 * share-locked without waiting: a delete holding it while it waits for the
 * run would otherwise deadlock with the failed task this sweep may store.
 */
const CANDIDATES = `
  FROM scheduler_execution e
  JOIN scheduler s ON s.id = e.scheduler_id
 WHERE e.status IN ('published', 'retrying')
   AND GREATEST(e.executed_at, e.published_at, e.started_at, e.finished_at, e.resent_at)
       < now() - make_interval(secs => $1::float8 / 1000)
   AND NOT s.stay_alive`;

/**
 * Recovers runs whose message the broker lost: a delay queue's dead-letter
 * worker stranded when its target queue's leader moved (rabbitmq-server
 * #12625), a purge, a node lost with its data. Such a run stays published
 * or retrying for ever with nothing to run it, and under `overlap_policy:
 * skip` holds back every later run of its scheduler.
 *
 * A candidate is sent again as copy k+1 (header `x-resent`, the ledger's
 * `resent`), carrying the retry it was lost at; the ledger counts the copy
 * in the same transaction as the confirm, so the consumer's start rule
 * refuses every older copy: should the old message turn up after all, it is
 * acknowledged without running, and the task still runs once. After
 * `maxResends` copies a run lost again is failed and kept in `failed_task`
 * (re-drive, failure notice), as a task that failed its retries is. Each
 * step is logged; nothing is sent or failed while a work queue has ready
 * messages, where a message may only be waiting. Rows are locked with SKIP
 * LOCKED, so several producers sweep without doubling up.
 */
export async function sweepLostRuns(
  pool: Pool,
  publisher: TaskPublisher,
  logger: Logger,
  options: LostRunSweepOptions,
): Promise<LostRunSweepResult> {
  const result: LostRunSweepResult = {resent: 0, failed: 0, deferred: 0};
  const {rows} = await pool.query<{n: number}>(
    `SELECT count(*)::int AS n ${CANDIDATES}`,
    [options.lostAfterMs],
  );
  if (rows[0].n === 0) return result;
  if (!(await options.workQueuesIdle())) {
    result.deferred = rows[0].n;
    logger.info(
      'Runs without activity left alone: work queues hold ready messages',
      {
        component: 'lost-run-sweep',
        runs: rows[0].n,
      },
    );
    return result;
  }
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  for (;;) {
    const batch = await sweepBatch(pool, publisher, logger, options, batchSize);
    result.resent += batch.resent;
    result.failed += batch.failed;
    // Stop when nothing is left, or when the broker confirmed none (it is down).
    if (batch.found < batchSize || batch.resent + batch.failed === 0) break;
  }
  return result;
}

async function sweepBatch(
  pool: Pool,
  publisher: TaskPublisher,
  logger: Logger,
  options: LostRunSweepOptions,
  batchSize: number,
): Promise<{found: number; resent: number; failed: number}> {
  const maxResends = options.maxResends ?? LOST_RUN_RESENDS;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const {rows} = await client.query<LostRun>(
      `SELECT e.id AS execution_id, e.scheduler_id, e.execution_key, e.payload,
              e.status, e.resent, COALESCE(e.last_retry_count, 0) AS last_retry_count,
              s.report_id, s.worker_id, s.reminder_id, s.http_target_id, s.params,
              floor(extract(epoch FROM now() - GREATEST(e.executed_at, e.published_at,
                e.started_at, e.finished_at, e.resent_at)) / 60)::int AS idle_minutes
         ${CANDIDATES}
        ORDER BY e.id
        LIMIT ${batchSize}
          FOR UPDATE OF e SKIP LOCKED
          FOR KEY SHARE OF s SKIP LOCKED`,
      [options.lostAfterMs],
    );
    const lostAgain = rows.filter(run => run.resent >= maxResends);
    const toResend = rows.filter(run => run.resent < maxResends);
    const resent = await resend(
      client,
      publisher,
      logger,
      toResend,
      maxResends,
    );
    for (const run of lostAgain) await fail(client, logger, run);
    await client.query('COMMIT');
    return {found: rows.length, resent, failed: lostAgain.length};
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
 * shutdown (published).
 */
const retryCountOf = (run: LostRun): number =>
  run.status === 'retrying' ? run.last_retry_count + 1 : run.last_retry_count;

async function resend(
  client: PoolClient,
  publisher: TaskPublisher,
  logger: Logger,
  runs: LostRun[],
  maxResends: number,
): Promise<number> {
  if (runs.length === 0) return 0;
  const confirmed = await publisher.publish(
    runs.map(run => ({
      executionId: Number(run.execution_id),
      executionKey: run.execution_key,
      message: messageOf(run),
      resend: {retryCount: retryCountOf(run), resent: run.resent + 1},
    })),
  );
  if (confirmed.size === 0) return 0;
  await client.query(
    `UPDATE scheduler_execution e
        SET resent = e.resent + 1, resent_at = c.confirmed_at,
            status_reason = 'sent again (' || (e.resent + 1) || ' of ' || $3::int
              || '): no sign of its message for ' || c.idle_minutes || ' min'
       FROM unnest($1::bigint[], $2::timestamptz[], $4::int[])
              AS c(id, confirmed_at, idle_minutes)
      WHERE e.id = c.id`,
    [
      [...confirmed.keys()],
      [...confirmed.values()],
      maxResends,
      [...confirmed.keys()].map(
        id => runs.find(run => Number(run.execution_id) === id)!.idle_minutes,
      ),
    ],
  );
  for (const run of runs) {
    if (!confirmed.has(Number(run.execution_id))) continue;
    logger.warn('Run lost by the broker; sent again', {
      component: 'lost-run-sweep',
      execution_id: Number(run.execution_id),
      scheduler_id: run.scheduler_id,
      execution_key: run.execution_key,
      status: run.status,
      retry_count: retryCountOf(run),
      resent: run.resent + 1,
      idle_minutes: run.idle_minutes,
    });
  }
  return confirmed.size;
}

/** A run lost after its last copy: failed, and kept for re-drive like a task that used its retries. */
async function fail(
  client: PoolClient,
  logger: Logger,
  run: LostRun,
): Promise<void> {
  const reason = `lost: no sign of its message for ${run.idle_minutes} min after ${run.resent} copies sent again; given up`;
  const failedAt = new Date();
  await client.query(
    `UPDATE scheduler_execution
        SET status = 'failed', finished_at = $2, duration_ms = NULL,
            last_error = $3, status_reason = $3
      WHERE id = $1`,
    [run.execution_id, failedAt, reason],
  );
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
    component: 'lost-run-sweep',
    type: message.type,
    id: message.id,
    scheduler_id: message.scheduler_id,
    execution_id: Number(run.execution_id),
    execution_key: run.execution_key,
    retry_count: retryCount,
    failed_at: failedAt.toISOString(),
    failed_reason: reason,
  });
}
