/**
 * Which copy of a run's message this is: 0 for the producer's own, k for
 * the k-th copy the lost-run sweep sent (see src/producer/lost-run-sweep.ts).
 * Retries keep the header, so a retry of copy k is copy k too.
 */
export const RESENT_HEADER = 'x-resent';

/**
 * The copy number on a delivery; 0 when it is missing or not a believable
 * count. A forged high number only makes a copy count as current, which
 * every message without the header is too before any sweep.
 */
export function resentOf(headers: Record<string, unknown> | undefined): number {
  const value = Number(headers?.[RESENT_HEADER]);
  return Number.isInteger(value) && value >= 0 && value <= 1_000_000
    ? value
    : 0;
}
