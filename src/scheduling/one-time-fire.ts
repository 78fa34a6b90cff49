import {
  calendarMatches,
  calendarVerdict,
  CalendarSkip,
  CompiledCalendar,
} from './calendar-match';
import {addMinutes, minuteSlot} from './slots';

/**
 * How close to a boundary a write may come and still be read by that
 * minute's tick: the producer's LATE_ACTIVATION_MS, for a commit that lands
 * after the tick read its candidates, or clocks a little apart. With no
 * catch-up, a minute whose tick is nearer than this counts as begun.
 */
export const BOUNDARY_MARGIN_MS = 5000;

/**
 * The earliest date_time a one-time scheduler can still fire at, seen at
 * `now`. One within the current minute fires at the next tick, a minute
 * late, so only while the producers may fire a past minute (`catchUpMinutes`
 * above 0); with none, the next tick would call it missed, so it must wait
 * for a minute whose tick is at least BOUNDARY_MARGIN_MS away.
 */
export function earliestOneTimeFire(now: Date, catchUpMinutes: number): Date {
  return catchUpMinutes > 0
    ? minuteSlot(now)
    : addMinutes(minuteSlot(new Date(now.getTime() + BOUNDARY_MARGIN_MS)), 1);
}

export interface OneTimeFireOptions {
  catchUpMinutes: number;
  startsAt: Date | null;
  endsAt: Date | null;
  /** The scheduler's calendars, in its order. */
  calendars: readonly CompiledCalendar[];
}

export type OneTimeFire =
  | {ahead: false; why: 'past' | 'outside-window'}
  | {ahead: true; skip?: CalendarSkip};

/**
 * Whether a one-time run at `at` is still to come as the producer would
 * treat it: not past (the rule that accepts a date_time), its minute inside
 * the active window, and, if so, whether a calendar skips it. The one rule
 * for next-runs and the inventory report.
 */
export function oneTimeFire(
  at: Date,
  now: Date,
  options: OneTimeFireOptions,
): OneTimeFire {
  const {catchUpMinutes, startsAt, endsAt, calendars} = options;
  if (at.getTime() < earliestOneTimeFire(now, catchUpMinutes).getTime())
    return {ahead: false, why: 'past'};
  const slot = minuteSlot(at);
  if (
    (startsAt !== null && slot.getTime() < startsAt.getTime()) ||
    (endsAt !== null && slot.getTime() > endsAt.getTime())
  )
    return {ahead: false, why: 'outside-window'};
  const skip = calendarVerdict(calendars, calendar =>
    calendarMatches(calendar, slot),
  );
  return skip ? {ahead: true, skip} : {ahead: true};
}
