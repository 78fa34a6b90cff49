import type {Logger} from '../logging/logger';
import type {TaskMessage} from '../queue/task-message';

export interface TaskContext {
  message: TaskMessage;
  params: Record<string, unknown>;
  executionKey?: string;
  /** 1 for the first execution, 2 after one retry, ... */
  attempt: number;
  /** Carries type, id, scheduler_id, execution_key and attempt. */
  logger: Logger;
  /** Aborted when the consumer shuts down mid-task. */
  signal: AbortSignal;
  /**
   * The run's success mark as a data-modifying CTE, for an executor whose
   * own statement can carry it: the task's effect and its outcome then
   * commit together (one round trip less, and a redelivery after a crash
   * finds the run succeeded instead of doing it twice). `$first` is the
   * mark's first parameter number; `condition` (SQL over the executor's own
   * CTEs) must hold for the mark to apply. Absent for runs the ledger does
   * not know; asking for it tells the consumer the executor records success.
   */
  successMark?: (first: number, condition: string) => SqlFragment;
}

/** Part of a parameterised statement: text with $n placeholders and their values. */
export interface SqlFragment {
  text: string;
  values: unknown[];
}

/** An expected failure with a reason fit for logs and the failed queue. */
export class TaskFailure extends Error {
  override name = 'TaskFailure';
}

/** The task ran past its time limit and was stopped (a failure like others). */
export class TaskTimedOut extends TaskFailure {
  override name = 'TaskTimedOut';
}

/** The task was stopped by a shutdown: it must be redelivered, not retried. */
export class TaskAborted extends Error {
  override name = 'TaskAborted';
}

export interface TaskExecutor {
  execute(context: TaskContext): Promise<void>;
}
