import {CompiledCron, cronMatchesDay} from './compiled-cron';
import {recurringDue} from './due';
import {addMinutes, MINUTE_MS, minuteSlot} from './slots';
import {slotClock, wallMinute, wallTimeAt} from './wall-clock';

/** How far ahead upcoming runs are looked for (a yearly schedule lists five). */
export const UPCOMING_HORIZON_DAYS = 5 * 366;

/**
 * The next `count` slots after `after` in which the producer would fire
 * `cron` in `timeZone`: the producer's own rule (`recurringDue` on each
 * slot's wall clock, DST catch-up and repeated hours included), not a second
 * implementation. Days, hours and minutes that cannot match are skipped whole,
 * unless the zone's offset changes inside them (then every minute is checked).
 */
export function upcomingRuns(
  cron: CompiledCron,
  timeZone: string,
  after: Date,
  count: number,
  horizonDays = UPCOMING_HORIZON_DAYS,
): Date[] {
  const runs: Date[] = [];
  const end = after.getTime() + horizonDays * 24 * 60 * MINUTE_MS;
  // Offset of the zone at an instant, in minutes (wall minus UTC).
  const offsetAt = (t: number) =>
    Math.round(wallMinute(wallTimeAt(new Date(t), timeZone)) - t / MINUTE_MS);
  /**
   * Jumps `minutes` ahead when the offset does not change on the way, nor
   * just before `from` (the first slot after a spring-forward gap fires the
   * runs the gap skipped, whatever its own wall hour).
   */
  const jump = (from: Date, minutes: number) => {
    const to = addMinutes(from, minutes);
    const offset = offsetAt(from.getTime());
    return offset === offsetAt(from.getTime() - MINUTE_MS) &&
      offset === offsetAt(to.getTime())
      ? to
      : undefined;
  };
  let slot = addMinutes(minuteSlot(after), 1);
  while (runs.length < count && slot.getTime() < end) {
    const wall = wallTimeAt(slot, timeZone);
    const dayMatches = cronMatchesDay(cron, wall);
    if (!dayMatches) {
      const toMidnight = jump(slot, (23 - wall.hour) * 60 + (60 - wall.minute));
      if (toMidnight) {
        slot = toMidnight;
        continue;
      }
    }
    if (!dayMatches || !cron.hours[wall.hour]) {
      const hours = dayMatches ? hoursToMatch(cron, wall.hour) : 1;
      const toNextHour = jump(slot, hours * 60 - wall.minute);
      if (toNextHour) {
        slot = toNextHour;
        continue;
      }
    }
    if (!cron.minutes[wall.minute]) {
      const toNextMinute = jump(slot, minutesToMatch(cron, wall.minute));
      if (toNextMinute) {
        slot = toNextMinute;
        continue;
      }
    }
    if (recurringDue(cron, slotClock(slot, timeZone))) runs.push(slot);
    slot = addMinutes(slot, 1);
  }
  return runs;
}

/** Hours from `hour` to the next one the cron matches, or to midnight. */
function hoursToMatch(cron: CompiledCron, hour: number): number {
  let next = hour + 1;
  while (next < 24 && !cron.hours[next]) next++;
  return next - hour;
}

/** Minutes from `minute` to the next one the cron matches, or to the hour's end. */
function minutesToMatch(cron: CompiledCron, minute: number): number {
  let next = minute + 1;
  while (next < 60 && !cron.minutes[next]) next++;
  return next - minute;
}
