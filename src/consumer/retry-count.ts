/** Our own retry counter; survives several retry queues and republishing. */
export const RETRY_COUNT_HEADER = 'x-retry-count';

/**
 * Retries already performed: our header, else the `count` of the first
 * `x-death` entry (messages dead-lettered by the broker), else 0.
 */
export function retryCountOf(
  headers: Record<string, unknown> | undefined,
): number {
  const own = Number(headers?.[RETRY_COUNT_HEADER]);
  if (
    headers?.[RETRY_COUNT_HEADER] !== undefined &&
    Number.isInteger(own) &&
    own >= 0
  ) {
    return own;
  }
  const deaths = headers?.['x-death'];
  if (Array.isArray(deaths) && deaths.length > 0) {
    const count = Number((deaths[0] as {count?: unknown}).count);
    if (Number.isInteger(count) && count >= 0) return count;
  }
  return 0;
}
