import {
  CompiledCron,
  CronCache,
  InvalidCronError,
} from '../scheduling/compiled-cron';
import type {SlotCalendars} from '../scheduling/calendar-match';
import {recurringDue} from '../scheduling/due';
import {finiteInstant, minuteSlot} from '../scheduling/slots';
import {isValidTimeZone, SlotClock, slotClock} from '../scheduling/wall-clock';
import type {Candidate} from './candidate';

export interface DueRun {
  schedulerId: number;
  slot: Date;
  /** Set when a calendar skips this fire: the ledger row says skipped, and why. */
  skipReason?: string;
}

/** A stored value the producer cannot read: that scheduler is skipped. */
export interface InvalidRow {
  schedulerId: number;
  field: 'schedule' | 'timezone' | 'date_time';
  value: string;
  problems: string[];
}

/** A one-time scheduler whose moment lies before the catch-up window. */
export interface MissedOneTime {
  schedulerId: number;
  dateTime: Date;
}

export interface Evaluation {
  due: DueRun[];
  invalid: InvalidRow[];
  missed: MissedOneTime[];
}

/** The minutes a tick may fire runs for: `oldest` to `current`, both included. */
export interface DueWindow {
  current: Date;
  oldest: Date;
}

/**
 * Slot clocks per time zone, each zone read once; a zone the runtime cannot
 * read is remembered as such (null), so one bad row costs one failed lookup.
 */
class ZoneClocks {
  private readonly byZone = new Map<string, SlotClock[] | null>();
  constructor(private readonly slots: Date[]) {}

  get(timeZone: string): SlotClock[] | null {
    let perSlot = this.byZone.get(timeZone);
    if (perSlot === undefined) {
      perSlot = isValidTimeZone(timeZone)
        ? this.slots.map(slot => slotClock(slot, timeZone))
        : null;
      this.byZone.set(timeZone, perSlot);
    }
    return perSlot;
  }
}

/**
 * Pure: which (scheduler, slot) pairs are due.
 * - A recurring scheduler is due in each of `slots` its expression matches,
 *   but never in a slot that began before it was activated (created,
 *   resumed, or given a new schedule or zone).
 * - A one-time scheduler is due once, for the minute of its `date_time`, as
 *   soon as that minute has begun and while it lies within `window`; older
 *   ones are `missed`. Claims dedupe repeated evaluations.
 * A row whose expression, zone or date cannot be read is `invalid` and
 * skipped; it never stops the evaluation of the others. Each distinct
 * expression is compiled once and each (zone, slot) read once.
 */
export function evaluateDue(
  candidates: Candidate[],
  slots: Date[],
  window: DueWindow,
  defaultTimeZone: string,
  cache: CronCache,
  calendars?: SlotCalendars,
): Evaluation {
  const evaluation: Evaluation = {due: [], invalid: [], missed: []};
  const zones = new ZoneClocks(slots);
  for (const candidate of candidates) {
    try {
      if (candidate.schedule !== null) {
        evaluateRecurring(
          candidate,
          slots,
          zones,
          defaultTimeZone,
          cache,
          evaluation,
          calendars,
        );
      } else if (candidate.date_time !== null) {
        evaluateOneTime(candidate, window, evaluation, slots, calendars);
      }
    } catch (error) {
      // Last line of defence: whatever one row does, the others still fire.
      evaluation.invalid.push({
        schedulerId: candidate.id,
        field: 'schedule',
        value: String(candidate.schedule ?? candidate.date_time),
        problems: [(error as Error).message],
      });
    }
  }
  return evaluation;
}

function evaluateRecurring(
  candidate: Candidate,
  slots: Date[],
  zones: ZoneClocks,
  defaultTimeZone: string,
  cache: CronCache,
  evaluation: Evaluation,
  calendars: SlotCalendars | undefined,
): void {
  const cron = cache.get(candidate.schedule!);
  if (cron instanceof InvalidCronError) {
    evaluation.invalid.push({
      schedulerId: candidate.id,
      field: 'schedule',
      value: candidate.schedule!,
      problems: cron.problems,
    });
    return;
  }
  const timeZone = candidate.timezone ?? defaultTimeZone;
  const perSlot = zones.get(timeZone);
  if (perSlot === null) {
    evaluation.invalid.push({
      schedulerId: candidate.id,
      field: 'timezone',
      value: timeZone,
      problems: [`unknown time zone "${timeZone}"`],
    });
    return;
  }
  const active = activeWindow(candidate);
  pushDueSlots(
    candidate,
    cron,
    slots,
    perSlot,
    active,
    evaluation.due,
    calendars,
  );
}

/** The slots a scheduler may fire in: from activation and starts_at to ends_at. */
function activeWindow(candidate: Candidate): {from: number; to: number} {
  const from = Math.max(
    finiteInstant(candidate.activated_at)?.getTime() ?? -Infinity,
    finiteInstant(candidate.starts_at)?.getTime() ?? -Infinity,
  );
  const to = finiteInstant(candidate.ends_at)?.getTime() ?? Infinity;
  return {from, to};
}

/** The run of `slots[index]`, marked skipped when a calendar says so. */
function dueRun(
  candidate: Candidate,
  slots: Date[],
  index: number,
  calendars: SlotCalendars | undefined,
): DueRun {
  const run: DueRun = {schedulerId: candidate.id, slot: slots[index]};
  const ids = candidate.calendar_ids;
  if (calendars && ids && ids.length > 0) {
    const skip = calendars.skipAt(ids, index);
    if (skip) run.skipReason = skip.reason;
  }
  return run;
}

function pushDueSlots(
  candidate: Candidate,
  cron: CompiledCron,
  slots: Date[],
  perSlot: SlotClock[],
  active: {from: number; to: number},
  due: DueRun[],
  calendars: SlotCalendars | undefined,
): void {
  for (let i = 0; i < slots.length; i++) {
    const t = slots[i].getTime();
    if (t < active.from || t > active.to) continue;
    if (recurringDue(cron, perSlot[i])) {
      due.push(dueRun(candidate, slots, i, calendars));
    }
  }
}

function evaluateOneTime(
  candidate: Candidate,
  window: DueWindow,
  evaluation: Evaluation,
  slots: Date[],
  calendars: SlotCalendars | undefined,
): void {
  const dateTime = finiteInstant(candidate.date_time);
  if (!dateTime) {
    evaluation.invalid.push({
      schedulerId: candidate.id,
      field: 'date_time',
      value: String(candidate.date_time),
      problems: ['date_time is not a finite instant'],
    });
    return;
  }
  const slot = minuteSlot(dateTime);
  if (slot.getTime() > window.current.getTime()) return;
  if (slot.getTime() < window.oldest.getTime()) {
    evaluation.missed.push({schedulerId: candidate.id, dateTime});
    return;
  }
  const active = activeWindow({...candidate, activated_at: new Date(NaN)});
  if (slot.getTime() < active.from || slot.getTime() > active.to) return;
  const index = slots.findIndex(s => s.getTime() === slot.getTime());
  // A one-time run whose minute is not among this tick's slots (a late
  // re-arm) is judged by the calendars of an own one-slot book.
  evaluation.due.push(
    index >= 0
      ? dueRun(candidate, slots, index, calendars)
      : dueRun(candidate, [slot], 0, calendars?.forSlots([slot])),
  );
}

/**
 * How many runs each recurring scheduler would have had in `slots` (for
 * skipped-slot logs and the missed-runs notice). With `calendars` (built for
 * these `slots`), a fire a calendar skips is not counted: it was never due.
 */
export function countDuePerScheduler(
  candidates: Candidate[],
  slots: Date[],
  defaultTimeZone: string,
  cache: CronCache,
  calendars?: SlotCalendars,
): Map<number, number> {
  const recurring = candidates.filter(candidate => candidate.schedule !== null);
  const window = {current: new Date(0), oldest: new Date(0)};
  const counts = new Map<number, number>();
  for (const run of evaluateDue(
    recurring,
    slots,
    window,
    defaultTimeZone,
    cache,
    calendars,
  ).due) {
    if (run.skipReason !== undefined) continue;
    counts.set(run.schedulerId, (counts.get(run.schedulerId) ?? 0) + 1);
  }
  return counts;
}
