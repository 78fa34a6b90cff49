import {CompiledCron, cronMatches} from './compiled-cron';
import type {SlotClock} from './wall-clock';

/**
 * Whether a recurring scheduler is due in a slot, with Vixie cron's DST rules:
 * - a fixed-time run whose wall minute a spring-forward gap skipped fires
 *   once, in the first slot after the gap;
 * - in the second pass of a repeated fall-back hour only jobs that follow
 *   real time (wildcard minute or hour) fire, so a fixed-time run fires once.
 */
export function recurringDue(cron: CompiledCron, clock: SlotClock): boolean {
  if (clock.repeated)
    return cron.followsRealTime && cronMatches(cron, clock.wall);
  if (cronMatches(cron, clock.wall)) return true;
  if (cron.followsRealTime) return false;
  for (const wall of clock.skipped) if (cronMatches(cron, wall)) return true;
  return false;
}
