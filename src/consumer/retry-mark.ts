import {setTimeout as sleep} from 'node:timers/promises';

export interface RetryMarkOptions {
  /** Give up once this long has passed since the first attempt. */
  deadlineMs: number;
  minDelayMs?: number;
  maxDelayMs?: number;
  now?: () => number;
  /** Called before each wait with the error and the coming delay. */
  onRetry?: (error: Error, delayMs: number) => void;
  /** Gives up at once when aborted (the shutdown grace is over). */
  signal?: AbortSignal;
}

/**
 * Runs `mark` until it succeeds or `deadlineMs` has passed, waiting with
 * capped exponential backoff between attempts. Resolves true when it
 * succeeded, false when it gave up (the caller logs and moves on).
 */
export async function retryMark(
  mark: () => Promise<void>,
  options: RetryMarkOptions,
): Promise<boolean> {
  const now = options.now ?? Date.now;
  const min = options.minDelayMs ?? 100;
  const max = options.maxDelayMs ?? 5000;
  const giveUpAt = now() + options.deadlineMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await mark();
      return true;
    } catch (error) {
      const left = giveUpAt - now();
      if (left <= 0 || options.signal?.aborted) return false;
      const delay = Math.min(max, min * 2 ** attempt, left);
      options.onRetry?.(error as Error, delay);
      const waited = await sleep(delay, true, {signal: options.signal}).catch(
        () => false,
      );
      if (!waited) return false;
    }
  }
}
