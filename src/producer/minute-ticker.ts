import type {Logger} from '../logging/logger';
import {msUntilNextMinute} from '../scheduling/slots';

/** A little after the boundary, so the new minute has surely begun. */
const AFTER_BOUNDARY_MS = 100;

/**
 * Calls `onTick` right away and then just after every minute boundary,
 * re-aligning to the clock each time (no drifting setInterval). A slow tick
 * delays the next one instead of overlapping it; the producer then catches
 * up the slots it missed. `rate` is how many clock milliseconds pass per real
 * millisecond (above 1 for a fast test clock): waits are real timers, so the
 * clock distance to the boundary is divided by it.
 */
export class MinuteTicker {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  /** When the last tick that did not fail finished, by the ticker's clock. */
  lastSuccessAt?: Date;

  constructor(
    private readonly clock: () => Date,
    private readonly onTick: (now: Date) => Promise<unknown>,
    private readonly logger: Logger,
    private readonly rate = 1,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.run();
  }

  /** Idempotent: no further ticks, and the one in flight finishes first. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private run(): void {
    this.running = this.onTick(this.clock())
      .then(() => {
        this.lastSuccessAt = this.clock();
      })
      .catch(error =>
        this.logger.error('Tick failed', {
          error: (error as Error).message,
          stack: (error as Error).stack,
        }),
      )
      .then(() => {
        this.running = undefined;
        if (this.stopped) return;
        const delay = msUntilNextMinute(this.clock()) + AFTER_BOUNDARY_MS;
        this.timer = setTimeout(() => this.run(), Math.ceil(delay / this.rate));
      });
  }
}
