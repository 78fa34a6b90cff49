import {
  CompiledCron,
  cronMatches,
  CronCache,
  InvalidCronError,
} from './compiled-cron';
import {wallTimeAt, WallTime} from './wall-clock';

export type CalendarKind = 'blackout' | 'allowed';

/** A calendar as stored: dates and times read in its own zone. */
export interface CalendarSpec {
  id: number;
  name: string;
  kind: string;
  time_zone: string;
  dates: string[];
  times: string[];
}

export interface CompiledCalendar {
  id: number;
  name: string;
  kind: CalendarKind;
  timeZone: string;
  /** YYYY-MM-DD keys: a set, so a thousand dates cost one lookup. */
  dates: ReadonlySet<string>;
  times: CompiledCron[];
}

/** Why a fire is skipped: the calendar that decided it, in words. */
export interface CalendarSkip {
  calendarId: number;
  calendarName: string;
  reason: string;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The wall day as a calendar date key, YYYY-MM-DD. */
export function dateKey(wall: WallTime): string {
  return `${pad(wall.year, 4)}-${pad(wall.month)}-${pad(wall.day)}`;
}

/**
 * Expands a stored calendar once. An expression the dialect refuses (only a
 * row written around the API) is left out and reported, never thrown.
 */
export function compileCalendar(
  spec: CalendarSpec,
  cache: CronCache,
): {calendar: CompiledCalendar; problems: string[]} {
  const times: CompiledCron[] = [];
  const problems: string[] = [];
  for (const expression of spec.times) {
    const cron = cache.get(expression);
    if (cron instanceof InvalidCronError) problems.push(cron.message);
    else times.push(cron);
  }
  return {
    calendar: {
      id: spec.id,
      name: spec.name,
      kind: spec.kind === 'allowed' ? 'allowed' : 'blackout',
      timeZone: spec.time_zone,
      dates: new Set(spec.dates),
      times,
    },
    problems,
  };
}

/** Whether the minute starting at `slot` is one of the calendar's, in its zone. */
export function calendarMatches(
  calendar: CompiledCalendar,
  slot: Date,
): boolean {
  const wall = wallTimeAt(slot, calendar.timeZone);
  if (calendar.dates.has(dateKey(wall))) return true;
  return calendar.times.some(cron => cronMatches(cron, wall));
}

const named = (calendar: CompiledCalendar) =>
  `"${calendar.name}" (id ${calendar.id})`;

/** Allowed calendars named in a skip reason; the rest are counted. */
const NAMED_IN_REASON = 3;

/**
 * The allowed calendars a skip reason names: a few, then how many more. The
 * reason is stored on every skipped run and shown in previews, so a
 * scheduler naming thousands of calendars must not write their names each
 * time.
 */
function namedList(calendars: CompiledCalendar[]): string {
  const names = calendars.slice(0, NAMED_IN_REASON).map(named).join(', ');
  const more = calendars.length - NAMED_IN_REASON;
  return more > 0 ? `${names} and ${more} more` : names;
}

/**
 * Whether a fire in `slot` is skipped by `calendars` (those one scheduler
 * names): a blackout calendar that matches skips it; otherwise, when the
 * scheduler names allowed calendars and none matches, it is skipped too.
 * Blackout wins. `matches` answers for one calendar (callers may memoise).
 */
export function calendarVerdict(
  calendars: readonly CompiledCalendar[],
  matches: (calendar: CompiledCalendar) => boolean,
): CalendarSkip | undefined {
  for (const calendar of calendars) {
    if (calendar.kind === 'blackout' && matches(calendar)) {
      return {
        calendarId: calendar.id,
        calendarName: calendar.name,
        reason: `calendar ${named(calendar)}: blackout matches this slot`,
      };
    }
  }
  const allowed = calendars.filter(calendar => calendar.kind === 'allowed');
  if (allowed.length === 0 || allowed.some(matches)) return undefined;
  return {
    calendarId: allowed[0].id,
    calendarName: allowed[0].name,
    reason: `calendar ${namedList(allowed)}: no allowed calendar matches this slot`,
  };
}

/**
 * Calendar answers for one tick's slots: each (calendar, slot) is computed
 * at most once, however many schedulers share the calendar, and each
 * distinct list of calendar ids is judged once per slot.
 */
export class SlotCalendars {
  private readonly matched = new Map<number, Int8Array>();
  private readonly verdicts = new Map<
    string | number,
    (CalendarSkip | null)[]
  >();

  constructor(
    private readonly calendars: ReadonlyMap<number, CompiledCalendar>,
    private readonly slots: readonly Date[],
  ) {}

  /** A book with the same calendars for other slots. */
  forSlots(slots: readonly Date[]): SlotCalendars {
    return new SlotCalendars(this.calendars, slots);
  }

  /** The skip for a scheduler naming `calendarIds` in slot `index`; ids unknown here are ignored. */
  skipAt(
    calendarIds: readonly number[],
    index: number,
  ): CalendarSkip | undefined {
    if (calendarIds.length === 0) return undefined;
    // Most schedulers name one calendar: its id is the key, no string built.
    const key =
      calendarIds.length === 1 ? calendarIds[0] : calendarIds.join(',');
    let perSlot = this.verdicts.get(key);
    if (!perSlot) {
      perSlot = new Array(this.slots.length).fill(undefined);
      this.verdicts.set(key, perSlot);
    }
    let verdict = perSlot[index];
    if (verdict === undefined) {
      const known = calendarIds
        .map(id => this.calendars.get(id))
        .filter((c): c is CompiledCalendar => c !== undefined);
      verdict =
        calendarVerdict(known, calendar => this.matches(calendar, index)) ??
        null;
      perSlot[index] = verdict;
    }
    return verdict ?? undefined;
  }

  private matches(calendar: CompiledCalendar, index: number): boolean {
    let perSlot = this.matched.get(calendar.id);
    if (!perSlot) {
      // 0 = not yet computed, 1 = matches, -1 = does not.
      perSlot = new Int8Array(this.slots.length);
      this.matched.set(calendar.id, perSlot);
    }
    if (perSlot[index] === 0) {
      perSlot[index] = calendarMatches(calendar, this.slots[index]) ? 1 : -1;
    }
    return perSlot[index] === 1;
  }
}
