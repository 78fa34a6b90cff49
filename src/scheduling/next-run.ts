import type {TurnSharer} from '../process/turn-sharer';
import type {CompiledCalendar} from './calendar-match';
import {CronCache, InvalidCronError} from './compiled-cron';
import {oneTimeFire} from './one-time-fire';
import {plannedFires, stopReason} from './planned-fires';
import {finiteInstant} from './slots';
import {isValidTimeZone} from './wall-clock';

export type NextRun =
  {at: Date; problem?: undefined} | {at: null; problem: string};

export interface NextRunScheduler {
  schedule: string | null;
  date_time: Date | null;
  status: boolean;
  stay_alive: boolean;
  /** Its own zone; null: the context's. */
  timezone?: string | null;
  /** Stored bounds; 'infinity' (no bound) arrives as a number. */
  starts_at: Date | null;
  ends_at: Date | null;
  calendar_ids?: number[] | null;
}

export interface NextRunContext {
  /** CRON_TZ: the zone of a scheduler without one. */
  timeZone: string;
  /** CRON_CATCHUP_MINUTES: whether a one-time run in the current minute still fires. */
  catchUpMinutes: number;
  /** Every calendar by id (ids a scheduler names that are missing are ignored, as the producer does). */
  calendars?: ReadonlyMap<number, CompiledCalendar>;
  /** Shared across many schedulers: each expression is compiled once. */
  cronCache?: CronCache;
  /** The most fires looked at for one that no calendar skips (default 5,000). */
  maxConsidered?: number;
  /** The clock of the look ahead's time budget (tests pass their own). */
  clock?: () => number;
  /**
   * Shared by a report's look aheads, so that rows of a few milliseconds
   * each still give the event loop back (default: one per look ahead).
   */
  turns?: TurnSharer;
}

/**
 * The next run strictly after `now` as the producer would fire it: the
 * producer's matcher in the scheduler's zone (DST gaps and repeats
 * included), inside the active window, passing over fires a calendar skips;
 * a one-time run by the rule that accepts its date_time. The same rules as
 * `GET /api/schedulers/{id}/next-runs`. Inactive schedulers and stay-alive
 * workers have none; `problem` says why there is none.
 */
export async function nextRun(
  scheduler: NextRunScheduler,
  now: Date,
  context: NextRunContext,
): Promise<NextRun> {
  if (scheduler.stay_alive) return {at: null, problem: 'stay-alive'};
  if (!scheduler.status) return {at: null, problem: 'inactive'};
  const calendars = (scheduler.calendar_ids ?? [])
    .map(id => context.calendars?.get(id))
    .filter((c): c is CompiledCalendar => c !== undefined);
  const startsAt = finiteInstant(scheduler.starts_at);
  const endsAt = finiteInstant(scheduler.ends_at);
  if (scheduler.schedule === null) {
    const dateTime = finiteInstant(scheduler.date_time);
    if (!dateTime)
      return {at: null, problem: 'date_time is not a finite instant'};
    const fire = oneTimeFire(dateTime, now, {
      catchUpMinutes: context.catchUpMinutes,
      startsAt,
      endsAt,
      calendars,
    });
    if (!fire.ahead)
      return {
        at: null,
        problem:
          fire.why === 'past'
            ? 'one-time run is past'
            : 'outside its active window',
      };
    return fire.skip
      ? {at: null, problem: `skipped: ${fire.skip.reason}`}
      : {at: dateTime};
  }
  const cron = (context.cronCache ?? new CronCache()).get(scheduler.schedule);
  if (cron instanceof InvalidCronError)
    return {
      at: null,
      problem: `invalid schedule: ${cron.problems.join('; ')}`,
    };
  const timeZone = scheduler.timezone ?? context.timeZone;
  // As the producer: a recurring scheduler in a zone it cannot read never fires.
  if (!isValidTimeZone(timeZone))
    return {
      at: null,
      problem: `unknown time zone "${timeZone}": the producer does not fire it`,
    };
  if (endsAt && endsAt.getTime() < now.getTime())
    return {
      at: null,
      problem: `active window ended at ${endsAt.toISOString()}`,
    };
  const maxConsidered = context.maxConsidered ?? 5000;
  const plan = await plannedFires(cron, timeZone, now, 1, {
    calendars,
    startsAt,
    endsAt,
    maxConsidered,
    clock: context.clock,
    turns: context.turns,
  });
  if (plan.runs.length > 0) return {at: plan.runs[0]};
  if (plan.skipped.length > 0)
    return {
      at: null,
      problem:
        plan.stoppedBy === 'time' || plan.stoppedBy === 'wall'
          ? `no run among the ${plan.skipped.length} fires looked at before the look ahead stopped because ${stopReason(plan.stoppedBy)}; later runs may exist: calendars skip them all (the first: ${plan.skipped[0].reason})`
          : `no run among the next ${plan.skipped.length} fires: calendars skip them all (the first: ${plan.skipped[0].reason})`,
    };
  return {
    at: null,
    problem: endsAt
      ? `no fire before its active window ends at ${endsAt.toISOString()}`
      : 'no fire within the next five years',
  };
}
