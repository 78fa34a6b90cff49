import type {Pool} from 'pg';
import {
  createPool,
  DatabaseTarget,
  PoolMode,
  DEFAULT_BACKGROUND_STATEMENT_TIMEOUT_MS,
  statementTimeout,
} from '../database/pg-pool';
import {runsLockedInIdOrder} from '../database/run-lock-order';
import type {Logger} from '../logging/logger';
import type {TaskMessage} from '../queue/task-message';

/**
 * The ledger's own small pool. Unless `durableCommit`, its sessions commit
 * with `synchronous_commit = off`: a mark is visible to every session at once
 * (so a redelivered success is still skipped) but does not wait for the WAL
 * flush, which costs about 1.2 ms per commit on this class of disk and would
 * cap a prefetch-1 consumer near 400 tasks/s. Only a PostgreSQL server crash
 * can lose the last marks (at most 3 x wal_writer_delay, 600 ms by default);
 * messages are never lost, because acks live in the broker. Behind a
 * transaction pooler no session setting travels, so marks then commit as the
 * server's default says (durably, unless the pooler sets otherwise).
 */
export function createLedgerPool(
  database: string | DatabaseTarget,
  logger: Logger,
  durableCommit: boolean,
  statementTimeoutMs = DEFAULT_BACKGROUND_STATEMENT_TIMEOUT_MS,
  size = 2,
): Pool {
  return createPool(database, logger, size, {
    ...statementTimeout(statementTimeoutMs),
    ...(durableCommit ? {} : {synchronous_commit: 'off'}),
  });
}

/**
 * What to do with a delivery: run it, acknowledge it as a duplicate, or
 * (`foreign`) park it: its x-execution-id names a run of another scheduler
 * than its body's, so it is no delivery of that run (a forged or reused id);
 * it must neither mark that run nor be taken for its duplicate.
 * `scheduler-deleted`: the run's row is gone and so is the scheduler the body
 * names (deleting a scheduler deletes its runs): a run queued before the
 * delete is acknowledged without running, as deleting the scheduler asked,
 * instead of running with nothing left to record it.
 */
export type StartDecision =
  | 'run'
  | 'succeeded'
  | 'failed'
  | 'skipped'
  | 'attempt-already-ran'
  | 'superseded'
  | 'foreign'
  | 'scheduler-deleted';

/**
 * The start rule, over the row `run`, the attempt's retry count and the
 * delivery's copy number (`x-resent`): a run starts unless it ended
 * (succeeded, failed after its retries, skipped as too old), waits for a
 * retry of this attempt or a later one, or was sent again by the lost-run
 * sweep after this copy went out (that later copy runs it, this one never).
 */
export function startable(
  run: string,
  retryCount: string,
  resent: string,
): string {
  return `${run}.status NOT IN ('succeeded', 'failed', 'skipped')
          AND NOT (${run}.status = 'retrying' AND COALESCE(${run}.last_retry_count, -1) >= ${retryCount})
          AND ${run}.resent <= ${resent}`;
}

/**
 * The ledger's part of a statement that runs whole tasks (see LedgerRun).
 * The CTE "run" starts each row of the CTE named by tasks (columns n,
 * execution_id, scheduler_id, retry_count, resent, started_at, finished_at,
 * duration_ms) whose run is of that scheduler and that the
 * start rule lets start: succeeded where the SQL succeeded (over that row,
 * aliased t) holds, running otherwise; it returns their n. The CTE "go"
 * adds the tasks the ledger does not hold (no execution id: the consumer's
 * start judged those; or its row is gone while its scheduler lives): their
 * effect runs unrecorded, as the consumer runs such tasks.
 */
export function startInStatement(tasks: string, succeeded: string): string {
  // The batch's runs are locked in id order first, as the producer's
  // marking locks them (see runsLockedInIdOrder).
  return `locked AS MATERIALIZED (
    ${runsLockedInIdOrder(`SELECT execution_id FROM ${tasks}`)}
  ),
  run AS (
    UPDATE scheduler_execution e
       SET status = CASE WHEN ${succeeded} THEN 'succeeded' ELSE 'running' END,
           attempts = e.attempts + 1, started_at = t.started_at,
           finished_at = CASE WHEN ${succeeded} THEN t.finished_at END,
           duration_ms = CASE WHEN ${succeeded} THEN t.duration_ms END,
           last_retry_count = t.retry_count
      FROM ${tasks} t
     WHERE e.id = t.execution_id AND e.id IN (SELECT id FROM locked)
       AND e.scheduler_id = t.scheduler_id
       AND ${startable('e', 't.retry_count', 't.resent')}
    RETURNING t.n
  ),
  go AS (
    SELECT t.n FROM ${tasks} t
     WHERE t.n IN (SELECT n FROM run) OR t.execution_id IS NULL
        OR (NOT EXISTS (SELECT 1 FROM scheduler_execution e WHERE e.id = t.execution_id)
            AND ${schedulerLives('t.scheduler_id')})
  )`;
}

/** SQL: the scheduler `id` names still exists (or none is named). */
function schedulerLives(id: string): string {
  return `(${id} IS NULL OR EXISTS (SELECT 1 FROM scheduler s WHERE s.id = ${id}))`;
}

/**
 * The consumer's side of the `scheduler_execution` row: published ->
 * running -> succeeded | retrying | failed, with attempts, times and the
 * last error. Runs without an execution id (hand-made or legacy messages) are
 * simply not recorded.
 */
export class RunLedger {
  /**
   * `pool` writes the marks (asynchronous commit unless
   * CRON_LEDGER_DURABLE_COMMIT); `durablePool` commits synchronously and
   * takes the start mark of a run not yet marked published (see `start`).
   */
  constructor(
    private readonly pool: Pool,
    private readonly durablePool: Pool = pool,
    /**
     * Named statements are parsed once per server session; behind a
     * transaction pooler a session is not ours to keep, so there they are
     * sent unnamed (PgBouncer 1.18 would hand one client's statement to
     * another's session: "already exists" / "does not exist").
     */
    private readonly poolMode: PoolMode = 'session',
  ) {}

  /**
   * Marks the run as running unless this delivery is a duplicate. A
   * duplicate is a message for a run that already ended (succeeded, or
   * failed after its last retry: re-drives get a run of their own), one the
   * sweeper skipped as too old (its publish confirm was lost), or one
   * whose attempt already ran while the run waits for its retry (the retry
   * copy carries a higher retry count). A run that is `running` is started
   * again: its consumer may have died (the broker redelivers). The common
   * case is one round trip; only a delivery the update did not touch costs a
   * second look to say why. `resent` is the delivery's copy number.
   */
  async start(
    executionId: number | undefined,
    at: Date,
    retryCount = 0,
    resent = 0,
    /** The delivery's scheduler: a run of another is never marked (see 'foreign'). */
    schedulerId?: number,
  ): Promise<StartDecision> {
    if (executionId === undefined) {
      // No run to mark (a hand-made or legacy message): judged by its
      // scheduler alone, so a deleted scheduler's message does not run.
      return schedulerId === undefined ||
        (await this.schedulerLives(schedulerId))
        ? 'run'
        : 'scheduler-deleted';
    }
    // A published run: the asynchronous session is enough (the sweeper never
    // looks at it again). An unpublished one (its producer died after the
    // confirm, or has not marked it yet) is marked on the durable session, so
    // a crash cannot undo the mark and make the sweeper send it again; a
    // failure there leaves the row untouched, not half-started.
    for (const [pool, name, condition] of [
      [this.pool, 'ledger-start', 'AND published_at IS NOT NULL'],
      [this.durablePool, 'ledger-start-unpublished', ''],
    ] as const) {
      const {rowCount} = await pool.query({
        // Named: parsed and planned once per connection, not once per task.
        ...(this.poolMode === 'session' ? {name} : {}),
        text: `UPDATE scheduler_execution
                  SET status = 'running', attempts = attempts + 1, started_at = $2,
                      finished_at = NULL, duration_ms = NULL, last_retry_count = $3
                WHERE id = $1 AND ($5::int IS NULL OR scheduler_id = $5)
                  AND ${startable('scheduler_execution', '$3', '$4')}
                  ${condition}`,
        values: [executionId, at, retryCount, resent, schedulerId ?? null],
      });
      if (rowCount) return 'run';
    }
    return this.whyNotStarted(executionId, resent, schedulerId);
  }

  private async schedulerLives(schedulerId: number): Promise<boolean> {
    const {rows} = await this.pool.query<{lives: boolean}>(
      `SELECT ${schedulerLives('$1::int')} AS lives`,
      [schedulerId],
    );
    return rows[0].lives;
  }

  /**
   * Why the start rule refused a delivery of `executionId` (copy number
   * `resent`): the run ended, a later copy replaced this one, or its attempt
   * already ran; with no such row, 'scheduler-deleted' when the scheduler
   * `schedulerId` is gone too, else 'run'.
   */
  async whyNotStarted(
    executionId: number,
    resent = 0,
    schedulerId?: number,
  ): Promise<StartDecision> {
    // One round trip: the row, and whether the body's scheduler still lives
    // (asked only for the rare delivery whose row is gone).
    const {rows} = await this.pool.query<{
      status: string | null;
      resent: number;
      scheduler_id: number;
      scheduler_lives: boolean;
    }>(
      `SELECT e.status, e.resent, e.scheduler_id,
              e.id IS NOT NULL OR ${schedulerLives('$2::int')} AS scheduler_lives
         FROM (SELECT 1) one
         LEFT JOIN scheduler_execution e ON e.id = $1`,
      [executionId, schedulerId ?? null],
    );
    const previous = rows[0].status;
    if (previous === null) {
      // No row: deleted with its scheduler, or by the 30-day cleanup (the
      // scheduler lives: run it as before).
      return rows[0].scheduler_lives ? 'run' : 'scheduler-deleted';
    }
    if (schedulerId !== undefined && rows[0].scheduler_id !== schedulerId)
      return 'foreign';
    if (
      previous === 'succeeded' ||
      previous === 'failed' ||
      previous === 'skipped'
    ) {
      return previous;
    }
    if (rows[0].resent > resent) return 'superseded';
    return 'attempt-already-ran';
  }

  /**
   * Records an attempt's outcome. `message` (a retry, or a run interrupted
   * by a shutdown) is kept as the run's payload unless it has one: should
   * the broker lose the message that waits, the lost-run sweep sends
   * exactly it again, not the scheduler as edited since.
   */
  async finished(
    executionId: number | undefined,
    status: 'succeeded' | 'retrying' | 'failed',
    at: Date,
    durationMs: number,
    error?: string,
    retryCount = 0,
    message?: TaskMessage,
  ): Promise<void> {
    if (executionId === undefined) return;
    // Unnamed: a named prepared statement lives in one server session, which
    // a transaction pooler does not keep for us. The mark of an attempt is
    // dropped once a later attempt has started (the retry is published
    // before this mark, and a slow database can hold the mark back while the
    // retries run) or the run has ended: it never overwrites their outcome.
    await this.pool.query({
      text: `UPDATE scheduler_execution
                SET status = $2, finished_at = $3, duration_ms = $4,
                    last_error = COALESCE($5, last_error),
                    payload = COALESCE(payload, $7::jsonb)
              WHERE id = $1
                AND status NOT IN ('succeeded', 'failed', 'skipped')
                AND COALESCE(last_retry_count, 0) <= $6`,
      values: [
        executionId,
        status,
        at,
        Math.round(durationMs),
        error ?? null,
        retryCount,
        message ?? null,
      ],
    });
  }

  /**
   * A shutdown or a closed channel interrupted the attempt that started at
   * `startedAt`: the run waits for redelivery again, its message kept as the
   * payload (see `finished`). Only that start is undone: when the broker
   * has already handed the message to another consumer, which started it
   * since, the run stays `running` (it is, and it must not look lost).
   */
  async interrupted(
    executionId: number | undefined,
    startedAt: Date,
    message?: TaskMessage,
  ): Promise<void> {
    await this.undoStart(executionId, startedAt, message, false);
  }

  /**
   * The task of the start at `startedAt` never began (TaskNotStarted):
   * undone as an interrupted start is, and its attempt is taken back, as
   * none ran.
   */
  async notStarted(
    executionId: number | undefined,
    startedAt: Date,
    message?: TaskMessage,
  ): Promise<void> {
    await this.undoStart(executionId, startedAt, message, true);
  }

  private async undoStart(
    executionId: number | undefined,
    startedAt: Date,
    message: TaskMessage | undefined,
    takeBackAttempt: boolean,
  ): Promise<void> {
    if (executionId === undefined) return;
    await this.pool.query(
      `UPDATE scheduler_execution
          SET status = 'published', payload = COALESCE(payload, $3::jsonb),
              attempts = CASE WHEN $4 THEN greatest(attempts - 1, 0) ELSE attempts END
        WHERE id = $1 AND status = 'running' AND started_at = $2`,
      [executionId, startedAt, message ?? null, takeBackAttempt],
    );
  }
}
