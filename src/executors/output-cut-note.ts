import type {Pool} from 'pg';
import type {TaskContext} from './task-executor';

/** Notes in the run ledger that the run's output was cut at the limit. */
export async function noteOutputCut(
  pool: Pool,
  context: TaskContext,
): Promise<void> {
  if (!context.executionKey) return;
  await pool.query(
    `UPDATE scheduler_execution SET output_truncated = true
      WHERE scheduler_id = $1 AND execution_key = $2`,
    [context.message.scheduler_id, context.executionKey],
  );
}

/**
 * The `onOutputCut` of a run: logs the cut and notes it in the ledger
 * (a failed note is logged, never fails the run).
 */
export function outputCutHandler(
  pool: Pool,
  context: TaskContext,
  maxBytes: number,
): () => void {
  return () => {
    context.logger.warn('Task output cut', {max_bytes: maxBytes});
    noteOutputCut(pool, context).catch(error =>
      context.logger.warn('Could not note the cut output', {
        error: (error as Error).message,
      }),
    );
  };
}
