import {TURN_MS, TurnSharer} from '../process/turn-sharer';
import {
  calendarMatches,
  calendarVerdict,
  CalendarSkip,
  CompiledCalendar,
} from './calendar-match';
import type {CompiledCron} from './compiled-cron';
import {MINUTE_MS} from './slots';
import {UPCOMING_HORIZON_DAYS, upcomingRuns} from './upcoming-runs';

export interface PlannedFires {
  /** The next fires that will run. */
  runs: Date[];
  /** Fires a calendar skips, up to the last listed run. */
  skipped: Array<CalendarSkip & {at: Date}>;
  /**
   * Set when the look ahead stopped before `count` runs, the five years or
   * the active window's end: at its most fires (`fires`), at its time of
   * work (`time`) or at its time in all (`wall`: the process was busy with
   * other work). Runs after `considered` fires may exist.
   */
  stoppedBy?: 'fires' | 'time' | 'wall';
  /** Fires looked at. */
  considered: number;
}

export interface FirePlanOptions {
  calendars: readonly CompiledCalendar[];
  startsAt?: Date | null;
  endsAt?: Date | null;
  /**
   * The most cron fires looked at (an allowed calendar may match rarely);
   * fewer with many calendars (LOOK_AHEAD_CALENDAR_CHECKS).
   */
  maxConsidered?: number;
  /**
   * Milliseconds of its own work the look ahead may take (default
   * LOOK_AHEAD_MS): past it, it stops and answers what it found among the
   * fires it looked at.
   */
  timeBudgetMs?: number;
  /** Milliseconds in all, its work and the others' between (default LOOK_AHEAD_WALL_MS). */
  wallBudgetMs?: number;
  /** Milliseconds from any origin, for the time budgets (tests pass their own). */
  clock?: () => number;
  /** Shares the event loop while calendars are judged (default: on `clock`). */
  turns?: TurnSharer;
  /**
   * Ends the look ahead at its next turn, rejecting with the signal's
   * reason (the client that asked has gone); for the default `turns` only.
   */
  signal?: AbortSignal;
}

/**
 * How long one look ahead with calendars may work. The calendar checks'
 * budget below bounds how many checks are made, but not what one costs: a
 * calendar in a zone of its own costs a wall-time lookup per day, so 100
 * calendars in 100 zones and a daily schedule took about 5 s for five years
 * of fires (1 s: about 400-1,800 of them, on a 2-core machine). The answer
 * says when it stopped for time. Meanwhile the look ahead gives the event
 * loop back every TURN_MS, so other requests are answered; the time they
 * take between its turns is not its work, so a busy API does not cut its
 * answer short, up to LOOK_AHEAD_WALL_MS.
 */
export const LOOK_AHEAD_MS = 1000;

/**
 * How long one look ahead may take in all, its turns and the others' work
 * between them: what bounds the request's answer time when many run at once
 * (20 at once each get about 1/20 of the process).
 */
export const LOOK_AHEAD_WALL_MS = 5000;

/** Why a look ahead stopped early, for the `incomplete` note and the next run's problem. */
export function stopReason(stoppedBy: PlannedFires['stoppedBy']): string {
  switch (stoppedBy) {
    case 'time':
      return `its time ran out (${LOOK_AHEAD_MS} ms)`;
    case 'wall':
      return `the process was busy and ${LOOK_AHEAD_WALL_MS} ms passed`;
    default:
      return 'it reached its most fires for these calendars';
  }
}

const BATCH = 100;

/**
 * The most calendar answers one look ahead may ask for: each fire looked at
 * may ask every calendar the scheduler names. 250,000 keeps the default
 * 5,000 fires for up to 50 calendars; a scheduler naming more looks at
 * fewer fires (at least one), so a preview or next-runs request holds the
 * event loop for a bounded time however many calendars it names (1,000
 * calendars that never match took 8 s on a 2-core machine before).
 */
export const LOOK_AHEAD_CALENDAR_CHECKS = 250_000;

/** The fires a look ahead may consider with `calendarCount` calendars. */
export function firesWithinBudget(
  maxConsidered: number,
  calendarCount: number,
): number {
  if (calendarCount === 0) return maxConsidered;
  return Math.max(
    1,
    Math.min(
      maxConsidered,
      Math.floor(LOOK_AHEAD_CALENDAR_CHECKS / calendarCount),
    ),
  );
}

/**
 * The next `count` fires of a recurring schedule as the producer would treat
 * them: the producer's matcher (`upcomingRuns`), only inside the active
 * window, and each judged by the scheduler's calendars. Skipped fires are
 * listed with the calendar that skips them, never moved.
 */
export async function plannedFires(
  cron: CompiledCron,
  timeZone: string,
  after: Date,
  count: number,
  options: FirePlanOptions,
): Promise<PlannedFires> {
  const {calendars, startsAt, endsAt} = options;
  const maxConsidered = firesWithinBudget(
    options.maxConsidered ?? 5000,
    calendars.length,
  );
  const horizon = after.getTime() + UPCOMING_HORIZON_DAYS * 24 * 60 * MINUTE_MS;
  const plan: PlannedFires = {runs: [], skipped: [], considered: 0};
  let from =
    startsAt && startsAt.getTime() > after.getTime()
      ? new Date(startsAt.getTime() - MINUTE_MS)
      : after;
  const clock = options.clock ?? performance.now.bind(performance);
  const started = clock();
  const workBudget = options.timeBudgetMs ?? LOOK_AHEAD_MS;
  const wallBudget = options.wallBudgetMs ?? LOOK_AHEAD_WALL_MS;
  // Only work with calendars is long enough to share the event loop.
  const turns =
    calendars.length > 0
      ? (options.turns ?? new TurnSharer(clock, TURN_MS, options.signal))
      : undefined;
  const workedBefore = turns?.worked(started) ?? 0;
  let considered = 0;
  let size = 0;
  while (plan.runs.length < count && considered < maxConsidered) {
    const days = (horizon - from.getTime()) / (24 * 60 * MINUTE_MS);
    if (days <= 0) break;
    // Ask for no more slots than are still wanted (the inventory report
    // asks one per scheduler); after a batch calendars skipped, for twice
    // as many, up to BATCH and never past maxConsidered.
    size = Math.min(
      BATCH,
      maxConsidered - considered,
      Math.max(count - plan.runs.length, size * 2),
    );
    const batch = upcomingRuns(cron, timeZone, from, size, days);
    for (const slot of batch) {
      plan.considered = ++considered;
      if (endsAt && slot.getTime() > endsAt.getTime()) return plan;
      if (startsAt && slot.getTime() < startsAt.getTime()) continue;
      const skip = calendarVerdict(calendars, calendar =>
        calendarMatches(calendar, slot),
      );
      if (skip) plan.skipped.push({...skip, at: slot});
      else plan.runs.push(slot);
      if (plan.runs.length >= count) return plan;
      // Each fire, not each batch: with many calendars one batch of 100
      // fires can take seconds. Without calendars a look ahead is short
      // (upcomingRuns skips ahead), and reads the clock only at its start.
      if (turns) {
        const now = clock();
        if (turns.worked(now) - workedBefore > workBudget) {
          plan.stoppedBy = 'time';
          return plan;
        }
        if (now - started > wallBudget) {
          plan.stoppedBy = 'wall';
          return plan;
        }
        if (turns.due(now)) await turns.pass(now);
      }
    }
    if (batch.length < size) break;
    from = batch[batch.length - 1];
  }
  if (considered >= maxConsidered && plan.runs.length < count) {
    plan.stoppedBy = 'fires';
  }
  return plan;
}
