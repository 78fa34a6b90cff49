import {setImmediate as nextTurn} from 'node:timers/promises';

/**
 * Milliseconds long synchronous work (a look ahead through many calendars,
 * a backfill's calendar verdicts) runs before it lets the event loop answer
 * others: a request arriving meanwhile waits about this long, not for the
 * whole work (a second or more). Each pass costs one event-loop turn, a few
 * microseconds.
 */
export const TURN_MS = 10;

/**
 * Shares one process's event loop between long work and everything else.
 * The work asks `due()` between its steps (a clock reading, no promise)
 * and awaits `pass()` when it is.
 */
export class TurnSharer {
  private turnStarted: number;

  constructor(
    private readonly clock: () => number = () => performance.now(),
    private readonly turnMs = TURN_MS,
  ) {
    this.turnStarted = clock();
  }

  /** True when the current turn has run its time (`now`: a reading of the same clock). */
  due(now = this.clock()): boolean {
    return now - this.turnStarted >= this.turnMs;
  }

  /** Lets the event loop run what waits (I/O, timers, other requests), then starts a new turn. */
  async pass(): Promise<void> {
    await nextTurn();
    this.turnStarted = this.clock();
  }
}
