/** Our own retry counter; survives several retry queues and republishing. */
export const RETRY_COUNT_HEADER = 'x-retry-count';

/**
 * Far above CRON_MAX_RETRIES (at most 100) and inside PostgreSQL's integer:
 * a larger count is not believable and must not reach the ledger, where a
 * write error would requeue the message for ever, ahead of every other task.
 */
export const MAX_BELIEVABLE_RETRY_COUNT = 10_000;

const believable = (count: number) =>
  Number.isInteger(count) && count >= 0 && count <= MAX_BELIEVABLE_RETRY_COUNT;

/**
 * Retries already performed: our header, else the `count` of the first
 * `x-death` entry (messages dead-lettered by the broker), else 0.
 */
export function retryCountOf(
  headers: Record<string, unknown> | undefined,
): number {
  const own = Number(headers?.[RETRY_COUNT_HEADER]);
  if (headers?.[RETRY_COUNT_HEADER] !== undefined && believable(own)) {
    return own;
  }
  const deaths = headers?.['x-death'];
  if (Array.isArray(deaths) && deaths.length > 0) {
    const count = Number((deaths[0] as {count?: unknown}).count);
    if (believable(count)) return count;
  }
  return 0;
}
