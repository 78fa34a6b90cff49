import type {Logger} from '../logging/logger';
import type {TaskMessage} from '../queue/task-message';
import {isTransientDatabaseError} from '../database/transient-error';

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
   * The run in the ledger, for an executor that marks its start itself
   * (`TaskExecutor.marksRunStart`): present only for such an executor and a
   * run the ledger knows.
   */
  run?: LedgerRun;
}

/**
 * A run whose start, effect and success an executor commits in one
 * statement: nothing of it is visible until all of it is, so a crash leaves
 * either the whole run recorded or nothing (the redelivery runs it then).
 * The statement applies the ledger's start rule itself: a duplicate
 * delivery starts nothing and has no effect.
 */
export interface LedgerRun {
  executionId: number;
  /** Retries before this attempt; the start rule compares it. */
  retryCount: number;
  /** The delivery's copy number (`x-resent`); the start rule compares it too. */
  resent: number;
  /** When the consumer took the delivery: the run's `started_at`. */
  startedAt: Date;
  /** The finish time and duration so far, for the statement's success mark. */
  finish(): {at: Date; durationMs: number};
  /**
   * What the statement did, before anything else is logged: true when it
   * started the run (its effect ran, and its success is recorded when it
   * succeeded), false when the start rule refused (nothing ran).
   */
  started(value: boolean): void;
}

/** An expected failure with a reason fit for logs and the failed queue. */
export class TaskFailure extends Error {
  override name = 'TaskFailure';
}

/** The task ran past its time limit and was stopped (a failure like others). */
export class TaskTimedOut extends TaskFailure {
  override name = 'TaskTimedOut';
}

/**
 * The task never began: what it needs before its work starts (its worker,
 * report or HTTP target row) could not be read because the database was
 * away (a lost connection, a restart, a resource limit). Nothing ran, so it
 * is no failed attempt: the delivery is requeued without spending a retry
 * (the last one would park a run that never ran).
 */
export class TaskNotStarted extends Error {
  override name = 'TaskNotStarted';
}

/**
 * Runs `lookup`, the read a task needs before its work begins. An error of
 * the database being away becomes TaskNotStarted; any other (a TaskFailure
 * such as a row that is gone, a dropped column, a revoked grant, a bug)
 * stays the task's failure, as it would fail the same way again.
 */
export async function beforeTaskStarts<T>(
  what: string,
  lookup: () => Promise<T>,
): Promise<T> {
  try {
    return await lookup();
  } catch (error) {
    if (error instanceof TaskFailure || !isTransientDatabaseError(error)) {
      throw error;
    }
    throw new TaskNotStarted(
      `${what} could not be read: ${(error as Error).message}`,
      {cause: error},
    );
  }
}

/** The task was stopped by a shutdown: it must be redelivered, not retried. */
export class TaskAborted extends Error {
  override name = 'TaskAborted';
}

export interface TaskExecutor {
  /**
   * True when the task is one database statement that also marks the run's
   * start and success (see `LedgerRun`): the consumer then marks neither.
   */
  readonly marksRunStart?: boolean;
  execute(context: TaskContext): Promise<void>;
}
