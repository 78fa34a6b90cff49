import type {SqlRunner} from './mark-published';

/** A task that failed for good, as `failed_task` keeps it for re-drive. */
export interface FailedTaskRecord {
  executionId: number | null;
  schedulerId: number | null;
  type: string | null;
  taskId: number | null;
  paramsScheduler: string | null;
  /** The parked message body, kept whole (an object, or its JSON text). */
  payload: object | string;
  failedReason: string;
  retryCount: number;
  failedAt: string | Date;
}

/**
 * Keeps a task in `failed_task` (inspection, re-drive) and queues its owner's
 * failure notice, in one statement: a crash after it still tells the owner,
 * and only once. A run's failure stored twice (its message's ack was lost, or
 * the lost-run sweep failed it too) is kept once.
 */
export async function storeFailedTask(
  db: SqlRunner,
  task: FailedTaskRecord,
): Promise<void> {
  await db.query(
    `WITH parked AS (
       INSERT INTO failed_task
         (execution_id, scheduler_id, type, task_id, params_scheduler, payload,
          failed_reason, retry_count, failed_at)
       -- An id naming another scheduler's run (a forged or reused one) is
       -- not kept: that run's own failure must still be stored.
       VALUES (CASE WHEN NOT EXISTS (
                 SELECT 1 FROM scheduler_execution e
                  WHERE e.id = $1 AND e.scheduler_id IS DISTINCT FROM $2)
               THEN $1::bigint END,
               $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (execution_id) WHERE execution_id IS NOT NULL DO NOTHING
       RETURNING id, scheduler_id
     )
     INSERT INTO failure_notice_outbox (failed_task_id, scheduler_id)
     SELECT p.id, p.scheduler_id FROM parked p
       JOIN scheduler s ON s.id = p.scheduler_id`,
    [
      task.executionId,
      task.schedulerId,
      task.type,
      task.taskId,
      task.paramsScheduler,
      task.payload,
      task.failedReason,
      task.retryCount,
      task.failedAt,
    ],
  );
}
