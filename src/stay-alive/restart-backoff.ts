export interface BackoffSettings {
  /** Delay before the first restart after a crash. */
  baseMs: number;
  /** The delay never grows beyond this. */
  maxMs: number;
  /** A run at least this long counts as stable: the next delay is the base again. */
  stableMs: number;
}

/**
 * Capped exponential restart delays for one supervised process: base, 2x,
 * 4x, ... up to max; a run that stayed up for `stableMs` resets the series.
 * Pure: the caller says how long the run lasted.
 */
export class RestartBackoff {
  private crashes = 0;

  constructor(private readonly settings: BackoffSettings) {}

  /** The delay before restarting a process that ran for `ranForMs`. */
  nextDelay(ranForMs: number): number {
    if (ranForMs >= this.settings.stableMs) this.crashes = 0;
    const delay = Math.min(
      this.settings.maxMs,
      this.settings.baseMs * 2 ** Math.min(this.crashes, 52),
    );
    this.crashes++;
    return delay;
  }

  /** Restarts since the last stable run. */
  get consecutiveCrashes(): number {
    return this.crashes;
  }
}
