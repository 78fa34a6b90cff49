/** The timer functions the supervisor uses; tests pass their own. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Milliseconds on a monotonic-enough clock. */
  now(): number;
}

export const REAL_TIMERS: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: handle => clearTimeout(handle as NodeJS.Timeout),
  now: () => Date.now(),
};
