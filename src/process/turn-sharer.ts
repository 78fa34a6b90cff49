import {setImmediate as nextTurn} from 'node:timers/promises';

/**
 * Milliseconds long synchronous work (a look ahead through many calendars,
 * a backfill's calendar verdicts) runs before it lets the event loop answer
 * others. A request arriving meanwhile waits about two turns (the first
 * pass from an I/O callback runs again before the loop polls), and K such
 * works at once make it wait about 2 × K turns: never the whole work (a
 * second or more). Each pass costs one event-loop turn, a few microseconds.
 */
export const TURN_MS = 10;

/**
 * Shares one process's event loop between long work and everything else.
 * The work asks `due()` between its steps (a clock reading, no promise)
 * and awaits `pass()` when it is. `worked()` counts the time of the work's
 * own turns, not of what the loop ran between them.
 */
export class TurnSharer {
  private turnStarted: number;
  private workedBefore = 0;

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

  /** Milliseconds the work's turns have taken up to `now`. */
  worked(now = this.clock()): number {
    return this.workedBefore + (now - this.turnStarted);
  }

  /** Lets the event loop run what waits (I/O, timers, other requests), then starts a new turn. */
  async pass(now = this.clock()): Promise<void> {
    this.workedBefore += now - this.turnStarted;
    await nextTurn();
    this.turnStarted = this.clock();
  }
}
