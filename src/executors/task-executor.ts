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
}

/** An expected failure with a reason fit for logs and the failed queue. */
export class TaskFailure extends Error {
  override name = 'TaskFailure';
}

/** The task was stopped by a shutdown: it must be redelivered, not retried. */
export class TaskAborted extends Error {
  override name = 'TaskAborted';
}

export interface TaskExecutor {
  execute(context: TaskContext): Promise<void>;
}
