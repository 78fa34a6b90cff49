import type {Logger} from '../logging/logger';
import {msUntilNextMinute} from '../scheduling/slots';

/**
 * How long after the boundary a tick starts: every run's dispatch waits this
 * long, so it is short. Node's timers keep to the monotonic clock; a wall
 * clock that NTP slews slower (up to 0.05 %, 30 ms a minute) can still read
 * just before the boundary when the timer ends, and then the ticker waits
 * out the rest instead of ticking in the old minute.
 */
export const AFTER_BOUNDARY_MS = 10;

/**
 * How long before the boundary the next tick's reading is made ahead
 * (`onPrepare`): long enough for 100,000 candidates to be read and
 * evaluated on a small machine, short enough that few change meanwhile.
 */
export const READ_AHEAD_MS = 3000;

/**
 * A tick's timer is armed to end this long before the tick, then armed again
 * for the rest. Linux lets a process sleeping in epoll_wait (where Node waits
 * for its timers) wake up to 0.1 % of the timeout late, up to 100 ms: a timer
 * armed a minute ahead ticked 20–60 ms after its time (measured here: a
 * 10 s timer 18 ms late, a 100 ms one 2.6 ms), and every run of the minute
 * waited that long. The last second's timer can be late by a millisecond.
 */
export const TIMER_LEAD_MS = 1000;

/**
 * How long before a tick `onWarm` wakes what the tick will use first. On the
 * machines measured, a database session idle for a minute answered its
 * first query in 40-73 ms (the next in under 2); one woken 50-200 ms
 * before answered in 2.4-4.4 ms. Long enough for the wake-up itself (up to
 * about 55 ms) to end before the tick.
 */
export const WARM_UP_MS = 150;

/**
 * Earlier than this before the boundary, the clock was set back rather than
 * slewed: the ticker ticks on by the new time (the producer evaluates no
 * slot twice) instead of going quiet until the old boundary comes again.
 */
const SLEW_LIMIT_MS = 1000;

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
  private prepareTimer?: NodeJS.Timeout;
  private warmTimer?: NodeJS.Timeout;
  private warming?: Promise<void>;
  private running?: Promise<void>;
  private preparing?: Promise<void>;
  private stopped = true;
  /** When the last tick that did not fail finished, by the ticker's clock. */
  lastSuccessAt?: Date;

  constructor(
    private readonly clock: () => Date,
    private readonly onTick: (now: Date) => Promise<unknown>,
    private readonly logger: Logger,
    private readonly rate = 1,
    /** Told READ_AHEAD_MS before each boundary when the next tick will run. */
    private readonly onPrepare?: (tickAt: Date) => Promise<unknown>,
    /** Told WARM_UP_MS before each tick to wake what it uses (a failure is only logged at debug). */
    private readonly onWarm?: () => Promise<unknown>,
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
    clearTimeout(this.prepareTimer);
    clearTimeout(this.warmTimer);
    await Promise.all([this.running, this.preparing, this.warming]);
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
        const now = this.clock();
        const boundary = now.getTime() + msUntilNextMinute(now);
        this.prepareBefore(boundary);
        this.warmBefore(boundary);
        this.runAfter(boundary);
      });
  }

  /**
   * Has the tick after `boundary` prepared READ_AHEAD_MS before it, or at
   * once when less is left; a failed preparation is logged, and that tick
   * reads in full.
   */
  private prepareBefore(boundary: number): void {
    const onPrepare = this.onPrepare;
    if (!onPrepare) return;
    const delay = boundary - READ_AHEAD_MS - this.clock().getTime();
    this.prepareTimer = setTimeout(
      () => {
        // One at a time: a preparation still under way (a database slower
        // than a minute) is not joined by another.
        if (this.stopped || this.preparing) return;
        this.preparing = onPrepare(new Date(boundary + AFTER_BOUNDARY_MS))
          .catch(error =>
            this.logger.warn('Preparing the next tick failed', {
              error: (error as Error).message,
            }),
          )
          .then(() => {
            this.preparing = undefined;
          });
      },
      Math.max(0, Math.ceil(delay / this.rate)),
    );
  }

  /**
   * Has `onWarm` run WARM_UP_MS before the tick after `boundary`; none when
   * less is left (a slow tick), nor while the last one is still under way.
   */
  private warmBefore(boundary: number): void {
    const onWarm = this.onWarm;
    if (!onWarm) return;
    const delay = boundary + AFTER_BOUNDARY_MS - WARM_UP_MS;
    const wait = Math.ceil((delay - this.clock().getTime()) / this.rate);
    if (wait < 0) return;
    this.warmTimer = preciseTimeout(
      () => {
        if (this.stopped || this.warming) return;
        this.warming = onWarm()
          .catch(error =>
            this.logger.debug('Warming up for the next tick failed', {
              error: (error as Error).message,
            }),
          )
          .then(() => {
            this.warming = undefined;
          });
      },
      wait,
      () => this.stopped,
      timer => (this.warmTimer = timer),
    );
  }

  /**
   * Runs a tick AFTER_BOUNDARY_MS after `boundary` (epoch ms) by the clock,
   * not before it unless the clock was set back.
   */
  private runAfter(boundary: number): void {
    const delay = boundary + AFTER_BOUNDARY_MS - this.clock().getTime();
    this.timer = preciseTimeout(
      () => {
        const early = boundary - this.clock().getTime();
        if (early > 0 && early < SLEW_LIMIT_MS) this.runAfter(boundary);
        else this.run();
      },
      Math.max(1, Math.ceil(delay / this.rate)),
      () => this.stopped,
      timer => (this.timer = timer),
    );
  }
}

/**
 * setTimeout for `ms`, kept to within about a millisecond: a long wait ends
 * TIMER_LEAD_MS early, on the monotonic clock as Node's timers are, and the
 * rest is a short timer. `onArm` is told each timer armed (for clearTimeout);
 * nothing more runs once `stopped` says so.
 */
function preciseTimeout(
  fire: () => void,
  ms: number,
  stopped: () => boolean,
  onArm: (timer: NodeJS.Timeout) => void,
): NodeJS.Timeout {
  if (ms <= 2 * TIMER_LEAD_MS) return setTimeout(fire, ms);
  const due = performance.now() + ms;
  return setTimeout(() => {
    if (stopped()) return;
    onArm(setTimeout(fire, Math.max(1, Math.ceil(due - performance.now()))));
  }, ms - TIMER_LEAD_MS);
}
