import type {TestClockConfig} from '../config';

/**
 * A clock that runs `scale` times faster than real time from `origin` on
 * (simulated = origin + (real - origin) * scale). Every process given the same
 * origin and scale agrees on the simulated time, so several producers (and a
 * restarted one) share one timeline. Test-only: config refuses it in production.
 */
export function scaledClock(
  {origin, scale}: TestClockConfig,
  realNow: () => number = Date.now,
): () => Date {
  const start = origin.getTime();
  return () => new Date(start + (realNow() - start) * scale);
}
