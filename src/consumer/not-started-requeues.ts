/**
 * Requeues of a delivery whose task could not begin (TaskNotStarted) in
 * a row, counted per attempt of a run in this consumer process. Past
 * MAX_NOT_STARTED_REQUEUES the delivery is no longer requeued but taken
 * as the attempt failing: a database that answers the start mark and keeps
 * losing the lookup must not hold the queue's head for ever, nor walk the
 * message into the quorum queue's delivery limit.
 */
export const MAX_NOT_STARTED_REQUEUES = 5;

/** Forgotten entries beyond this many (deliveries another consumer took) are dropped oldest first. */
const MAX_TRACKED = 1000;

export class NotStartedRequeues {
  private readonly counts = new Map<string, number>();

  /** Counts one more not-started requeue of `key`; returns how many in a row, this one included. */
  add(key: string): number {
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.delete(key);
    this.counts.set(key, count);
    if (this.counts.size > MAX_TRACKED) {
      this.counts.delete(this.counts.keys().next().value!);
    }
    return count;
  }

  /** The attempt began, or was given up: its count starts again. */
  forget(key: string): void {
    this.counts.delete(key);
  }

  /** Nothing counted: the common case, where no attempt's key need be built. */
  get empty(): boolean {
    return this.counts.size === 0;
  }
}

/** One attempt of one run: a retry is another attempt and counts afresh. */
export function attemptKey(
  schedulerId: number,
  taskId: number,
  executionKey: string | undefined,
  retryCount: number,
): string {
  return `${schedulerId} ${taskId} ${executionKey ?? '-'} ${retryCount}`;
}
