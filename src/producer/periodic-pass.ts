/**
 * One background pass after another on a timer, off every caller's path.
 * The next pass is timed from the end of the one before, so a slow pass is
 * never overlapped by the next; `stop` waits for the pass in flight, so a
 * shutdown never closes the pool under it. The timer is unref'd: it alone
 * keeps no process alive. `pass` must not reject (it logs its own errors).
 */
export class PeriodicPass {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  /** Each start's chain: a pass of a stopped chain never schedules another. */
  private chain = 0;

  constructor(
    private readonly pass: () => Promise<void>,
    /** The wait before the next pass, asked after each one ends. */
    private readonly nextDelayMs: () => number,
  ) {}

  start(firstDelayMs: number): void {
    if (!this.stopped) return;
    this.stopped = false;
    const chain = ++this.chain;
    const begin = () => {
      if (!this.stopped && chain === this.chain) {
        this.schedule(firstDelayMs, chain);
      }
    };
    // After the pass a stop did not wait for, when one is still in flight.
    if (this.running) this.running.then(begin, begin);
    else begin();
  }

  /** Idempotent: no further passes, and the one in flight finishes first. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number, chain: number): void {
    this.timer = setTimeout(() => {
      this.running = this.pass().then(() => {
        this.running = undefined;
        // A start after a stop that was not awaited began a new chain.
        if (!this.stopped && chain === this.chain) {
          this.schedule(this.nextDelayMs(), chain);
        }
      });
    }, delayMs);
    this.timer.unref();
  }
}
