import {CronCache, InvalidCronError} from '../scheduling/compiled-cron';
import {oneTimeDue, recurringDue} from '../scheduling/due';
import {SlotClock, slotClock} from '../scheduling/wall-clock';
import type {Candidate} from './candidate';

export interface DueRun {
  schedulerId: number;
  slot: Date;
}

export interface Evaluation {
  due: DueRun[];
  /** Schedulers whose stored expression is invalid: skipped. */
  invalid: Array<{schedulerId: number; expression: string; problems: string[]}>;
}

/**
 * Pure: which (scheduler, slot) pairs are due. Each distinct expression is
 * compiled once (cached by text) and each (time zone, slot) read once, so
 * per scheduler the work is a few table lookups.
 */
export function evaluateDue(
  candidates: Candidate[],
  slots: Date[],
  defaultTimeZone: string,
  cache: CronCache,
): Evaluation {
  const due: DueRun[] = [];
  const invalid: Evaluation['invalid'] = [];
  const clocks = new Map<string, SlotClock[]>();
  const clocksFor = (timeZone: string) => {
    let perSlot = clocks.get(timeZone);
    if (!perSlot) {
      perSlot = slots.map(slot => slotClock(slot, timeZone));
      clocks.set(timeZone, perSlot);
    }
    return perSlot;
  };

  for (const candidate of candidates) {
    if (candidate.schedule !== null) {
      const cron = cache.get(candidate.schedule);
      if (cron instanceof InvalidCronError) {
        invalid.push({
          schedulerId: candidate.id,
          expression: candidate.schedule,
          problems: cron.problems,
        });
        continue;
      }
      const perSlot = clocksFor(candidate.timezone ?? defaultTimeZone);
      for (let i = 0; i < slots.length; i++) {
        if (recurringDue(cron, perSlot[i])) {
          due.push({schedulerId: candidate.id, slot: slots[i]});
        }
      }
    } else if (candidate.date_time !== null) {
      for (const slot of slots) {
        if (oneTimeDue(candidate.date_time, slot)) {
          due.push({schedulerId: candidate.id, slot});
        }
      }
    }
  }
  return {due, invalid};
}

/** How many runs each scheduler would have had in `slots` (for skipped-slot logs). */
export function countDuePerScheduler(
  candidates: Candidate[],
  slots: Date[],
  defaultTimeZone: string,
  cache: CronCache,
): Map<number, number> {
  const counts = new Map<number, number>();
  for (const run of evaluateDue(candidates, slots, defaultTimeZone, cache)
    .due) {
    counts.set(run.schedulerId, (counts.get(run.schedulerId) ?? 0) + 1);
  }
  return counts;
}
