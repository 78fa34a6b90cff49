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
 * own turns, not of what the loop ran between them. With a `stop` signal,
 * the work ends at its next pass once the signal aborts: `pass()` rejects
 * with the signal's reason.
 */
export class TurnSharer {
  private turnStarted: number;
  private workedBefore = 0;

  constructor(
    private readonly clock: () => number = () => performance.now(),
    private readonly turnMs = TURN_MS,
    private readonly stop?: AbortSignal,
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

  /** A sharer on the usual clock and turn whose work ends when `stop` aborts. */
  static until(stop: AbortSignal | undefined): TurnSharer {
    return new TurnSharer(undefined, undefined, stop);
  }

  /**
   * Lets the event loop run what waits (I/O, timers, other requests), then
   * starts a new turn; rejects with the stop signal's reason once it aborted.
   */
  async pass(now = this.clock()): Promise<void> {
    this.workedBefore += now - this.turnStarted;
    await nextTurn();
    this.stop?.throwIfAborted();
    this.turnStarted = this.clock();
  }
}
