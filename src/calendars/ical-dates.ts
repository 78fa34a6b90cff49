import {isCalendarDate} from '../validation/calendar-date';
import ICAL from 'ical.js';

/** How far ahead recurring events are expanded. */
export const IMPORT_YEARS = 5;

/**
 * At most this many occurrences are walked per file. ical.js cannot jump to
 * a day: a rule without COUNT or UNTIL is walked from its DTSTART, so a daily
 * rule from year 1 would hold the event loop for seconds. A holiday feed
 * walks a few thousand; a daily rule since 1990 about 15,500.
 */
export const MAX_OCCURRENCES_EXAMINED = 20_000;

/** The body is not an iCalendar file (or holds no calendar). */
export class NotICalendarError extends Error {
  override name = 'NotICalendarError';
}

/** Expanding the file would give more days than a calendar may hold. */
export class TooManyDatesError extends Error {
  override name = 'TooManyDatesError';
}

export interface ImportedDates {
  /** Whole days the file's all-day events cover, YYYY-MM-DD, sorted, each once. */
  dates: string[];
  /** Events with a time of day: not whole days, so not imported. */
  timed_events_ignored: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function dayKey(year: number, month: number, day: number): string {
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
}

function keyOfUtc(date: Date): string {
  return dayKey(
    date.getUTCFullYear(),
    date.getUTCMonth() + 1,
    date.getUTCDate(),
  );
}

/** Days as UTC midnights, the bounds of what an occurrence may add. */
interface DayWindow {
  fromMs: number;
  untilMs: number;
}

/** Midnight UTC of a day of any year (Date.UTC reads years 0-99 as 1900-1999). */
function utcMidnight(year: number, month: number, day: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getTime();
}

function utcDay(time: ICAL.Time): number {
  return utcMidnight(time.year, time.month, time.day);
}

/**
 * The days an all-day occurrence starting at `start` covers (DTEND is
 * exclusive), only those inside `window`: an event spanning thousands of
 * years costs the window's days, never its own.
 */
function coveredDays(
  start: ICAL.Time,
  days: number,
  window: DayWindow,
): string[] {
  const startMs = utcDay(start);
  const first = Math.max(startMs, window.fromMs);
  const last = Math.min(startMs + (days - 1) * DAY_MS, window.untilMs);
  const keys: string[] = [];
  for (let ms = first; ms <= last; ms += DAY_MS)
    keys.push(keyOfUtc(new Date(ms)));
  return keys;
}

/** The properties whose values name days. */
const DAY_PROPERTIES = ['dtstart', 'dtend', 'rdate', 'exdate', 'rrule'];

/** A DATE or DATE-TIME as ical.js writes it in jCal: all digits where digits belong. */
const JCAL_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * Refuses a date that is no date (`2027120X`, `2027-13-99`, 30 February, a
 * 25th hour) in DTSTART, DTEND, RDATE, EXDATE or an RRULE's UNTIL. ical.js
 * reads such a value leniently and rolls it over (2027-13-99 became
 * 2028-04-08, 2027120X 2027-11-30), so the raw text is checked: the file
 * named a day, and another would be imported silently.
 */
function checkDaysExist(component: ICAL.Component): void {
  for (const name of DAY_PROPERTIES) {
    for (const property of component.getAllProperties(name)) {
      const jCal = property.jCal as unknown[];
      const values =
        name === 'rrule'
          ? [(jCal[3] as {until?: unknown} | undefined)?.until]
          : jCal.slice(3).flat();
      for (const value of values) {
        if (typeof value !== 'string') continue;
        // A PERIOD (start/end or start/duration): its start names the day.
        const text = value.split('/')[0];
        if (!isInstant(text)) {
          const shown = `${name === 'rrule' ? 'UNTIL' : name.toUpperCase()} ${JSON.stringify(text.slice(0, 40))}`;
          throw new NotICalendarError(
            `the body's ${shown} is not a day of the calendar`,
          );
        }
      }
    }
  }
}

function isInstant(text: string): boolean {
  const parts = JCAL_INSTANT.exec(text);
  if (!parts) return false;
  const [year, month, day] = parts.slice(1, 4).map(Number);
  const [hour, minute, second] = parts.slice(4, 7).map(p => Number(p ?? 0));
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour < 24 &&
    minute < 60 &&
    second <= 60
  );
}

/**
 * An RRULE content line: its parameters (a quoted value may hold `:` and
 * `;`), then its value. Applied to one line at a time, with `s` so that
 * U+2028, U+2029 and a lone CR stay inside the line as ical.js keeps them.
 */
const RRULE_LINE =
  /^RRULE(?:;[^:;"=]*=(?:"[^"]*"|[^:;",]*)(?:,(?:"[^"]*"|[^:;",]*))*)*:(.*)$/is;

/**
 * The largest INTERVAL of each FREQ whose period fits in the 10,000 years a
 * calendar's dates span (0001 to 9999): a longer one can never repeat inside
 * them. ical.js walks a DAILY or WEEKLY period about a day at a time (3.3 s
 * for an INTERVAL of 10,000,000 days), so a rule beyond these is refused
 * before it is expanded; at the bound one period takes about half a second.
 */
const MAX_INTERVAL_BY_FREQ = new Map<string, number>([
  ['SECONDLY', 315_569_520_000],
  ['MINUTELY', 5_259_492_000],
  ['HOURLY', 87_658_200],
  ['DAILY', 3_652_425],
  ['WEEKLY', 521_775],
  ['MONTHLY', 120_000],
  ['YEARLY', 10_000],
]);

/**
 * Refuses an RRULE whose INTERVAL is not a positive integer (RFC 5545), or
 * whose period is longer than a calendar's 10,000 years. ical.js reads 0, -2
 * and 1.5 as 1, so the rule a file got wrong would be imported as another
 * one, and it spins through a huge one; the raw text is read, its folded
 * lines joined and split where ical.js splits them (CRLF or LF).
 */
function checkRuleIntervals(text: string): void {
  const lines = text.replace(/\r?\n[ \t]/g, '').split(/\r?\n/);
  for (const line of lines) {
    const value = RRULE_LINE.exec(line)?.[1];
    if (value === undefined) {
      // ical.js names a line by what comes before its first `;` or `:`,
      // and reads an RRULE behind parameters this check cannot (review:
      // `RRULE;A:B=1:…`, `RRULE;X-A=a"b:…`): such a line is refused.
      if (/^RRULE$/i.test(line.slice(0, line.search(/[;:]|$/)))) {
        throw new NotICalendarError(
          'the body holds an RRULE line whose parameters cannot be read (an RRULE takes none but X- names with plain or quoted values)',
        );
      }
      continue;
    }
    // Every INTERVAL and FREQ given is checked: which of a repeated one
    // ical.js reads is its business.
    const intervals: string[] = [];
    const freqs: string[] = [];
    for (const part of value.split(';')) {
      const [name, given = ''] = part.split('=');
      const key = name.trim().toUpperCase();
      if (key === 'INTERVAL') intervals.push(given.trim());
      if (key === 'FREQ') freqs.push(given.trim().toUpperCase());
    }
    for (const interval of intervals) {
      if (!/^[1-9]\d*$/.test(interval)) {
        throw new NotICalendarError(
          `the body's RRULE INTERVAL ${JSON.stringify(interval.slice(0, 20))} is not a positive integer`,
        );
      }
      for (const freq of freqs) checkPeriod(interval.slice(0, 20), freq);
    }
  }
}

/** Refuses an INTERVAL (digits) of `freq` past MAX_INTERVAL_BY_FREQ. */
function checkPeriod(interval: string, freq: string): void {
  const max = MAX_INTERVAL_BY_FREQ.get(freq);
  if (max !== undefined && Number(interval) > max) {
    throw new NotICalendarError(
      `the body's RRULE INTERVAL ${interval} with FREQ=${freq} repeats less than once in the 10,000 years a calendar holds (at most ${max})`,
    );
  }
}

/**
 * The interval bound again, on the rules as ical.js read them: whatever
 * the text looked like, no rule it expands has a longer period.
 */
export function checkParsedIntervals(component: ICAL.Component): void {
  for (const property of component.getAllProperties('rrule')) {
    for (const recur of property.getValues() as ICAL.Recur[]) {
      checkPeriod(String(recur.interval), String(recur.freq).toUpperCase());
    }
  }
}

/**
 * The file's VCALENDARs: one, or several one after another (a legal
 * iCalendar stream; ical.js then answers a list of them).
 */
function parseCalendars(text: string): ICAL.Component[] {
  let parsed: unknown[];
  try {
    parsed = ICAL.parse(text) as unknown[];
  } catch (error) {
    throw new NotICalendarError(`the body is not iCalendar${icalSaid(error)}`);
  }
  checkRuleIntervals(text);
  const roots = Array.isArray(parsed[0]) ? (parsed as unknown[][]) : [parsed];
  if (parsed.length === 0) {
    throw new NotICalendarError('the body is not iCalendar: it holds nothing');
  }
  return readingValues(() =>
    roots.map(jCal => {
      const root = new ICAL.Component(jCal as unknown[]);
      if (root.name !== 'vcalendar') {
        throw new NotICalendarError(
          `the body is not iCalendar: it holds a ${String(root.name).toUpperCase()}, not a VCALENDAR`,
        );
      }
      return root;
    }),
  );
}

/**
 * Runs `read` over the file's values, which ical.js decodes only when they
 * are asked for (a DTSTART of 2027AB25 or a DURATION of PXYZ throws there,
 * not while parsing): what it cannot read is the file's fault, a 422, never
 * a 500. ical.js's own errors say what was wrong; a TypeError says only
 * where our reading stumbled, so it is not passed on.
 */
function readingValues<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (
      error instanceof NotICalendarError ||
      error instanceof TooManyDatesError
    )
      throw error;
    throw new NotICalendarError(
      `the body holds a value that cannot be read${icalSaid(error)}`,
    );
  }
}

/**
 * What ical.js said about the file (`: invalid duration value`), or nothing
 * for an error of the engine (TypeError, RangeError…): its text is about our
 * code, not the file, and is not for the caller.
 */
function icalSaid(error: unknown): string {
  const engine =
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError;
  return error instanceof Error && !engine
    ? `: ${error.message.slice(0, 200)}`
    : '';
}

const daysInMonth = (year: number, month: number) =>
  new Date(utcMidnight(year, month + 1, 0)).getUTCDate();

/**
 * Whether `rule` can give `day` at all. ical.js rolls a day the month lacks
 * over into the next month (30 February became 2 March, a yearly 29 February
 * 1 March), where RFC 5545 3.3.10 ignores it: an occurrence on a day or month
 * the rule does not allow is such a roll-over.
 */
function ruleAllows(rule: ICAL.Recur, start: ICAL.Time, day: ICAL.Time) {
  const parts = rule.parts as Record<string, number[] | undefined>;
  const months = parts.BYMONTH;
  if (months && !months.includes(day.month)) return false;
  const monthDays = parts.BYMONTHDAY;
  if (monthDays) {
    const last = daysInMonth(day.year, day.month);
    return monthDays.some(n => (n > 0 ? n : last + n + 1) === day.day);
  }
  const dayRules = parts.BYDAY ?? parts.BYYEARDAY ?? parts.BYWEEKNO;
  if (dayRules) return true;
  // No day rule: the day of DTSTART (and, yearly without BYMONTH, its month).
  if (rule.freq === 'MONTHLY') return day.day === start.day;
  if (rule.freq === 'YEARLY') {
    return (
      day.day === start.day &&
      (months !== undefined || day.month === start.month)
    );
  }
  return true;
}

/**
 * Whether an occurrence is DTSTART, an RDATE, or one some RRULE allows.
 * Built once per event: the RDATEs and rules are read once, not per day.
 */
function realOccurrences(
  component: ICAL.Component,
  start: ICAL.Time,
): (day: ICAL.Time) => boolean {
  const key = (t: ICAL.Time) => dayKey(t.year, t.month, t.day);
  const fixed = new Set(
    component
      .getAllProperties('rdate')
      .flatMap(property => property.getValues() as unknown[])
      .filter((value): value is ICAL.Time => value instanceof ICAL.Time)
      .map(key),
  );
  fixed.add(key(start));
  const rules = component
    .getAllProperties('rrule')
    .map(property => property.getFirstValue() as ICAL.Recur);
  return day =>
    fixed.has(key(day)) || rules.some(rule => ruleAllows(rule, start, day));
}

function tooMany(maxDates: number): TooManyDatesError {
  return new TooManyDatesError(
    `the file gives more than ${maxDates} days, more than a calendar holds`,
  );
}

/**
 * The next occurrence, or NotICalendarError when ical.js gives up on the
 * rule (a sub-daily FREQ on a DATE start repeats the same day and ical.js
 * throws a plain Error): the file is the caller's to fix, not a 500.
 */
function nextOccurrence(
  occurrences: ReturnType<ICAL.Event['iterator']>,
): ICAL.Time | null {
  try {
    return occurrences.next() ?? null;
  } catch (error) {
    throw new NotICalendarError(
      `the body holds a recurrence ical.js cannot expand: ${(error as Error).message}`,
    );
  }
}

/**
 * The whole days of an iCalendar file's all-day events, parsed by ical.js:
 * a single event gives its days; a recurring one (RRULE, RDATE, EXDATE) the
 * days of its occurrences from the day of `now` to `years` years later.
 * Events with a time of day are counted, not imported.
 */
export function importAllDayDates(
  text: string,
  now: Date,
  maxDates: number,
  years = IMPORT_YEARS,
): ImportedDates {
  const roots = parseCalendars(text);
  const fromMs = Date.UTC(
    now.getUTCFullYear(),
    now.getUTCMonth(),
    now.getUTCDate() - 1,
  );
  const untilDate = new Date(now.getTime());
  untilDate.setUTCFullYear(untilDate.getUTCFullYear() + years);
  const untilMs = Date.UTC(
    untilDate.getUTCFullYear(),
    untilDate.getUTCMonth(),
    untilDate.getUTCDate(),
  );
  const recurringWindow = {fromMs, untilMs};
  const dates = new Set<string>();
  let timed = 0;
  let examined = 0;
  const add = (keys: string[]) => {
    for (const key of keys) dates.add(key);
    if (dates.size > maxDates) throw tooMany(maxDates);
  };
  readingValues(() => {
    const events = roots.flatMap(root => root.getAllSubcomponents('vevent'));
    for (const component of events) {
      const event = new ICAL.Event(component);
      const start = event.startDate;
      if (!start) continue;
      if (!start.isDate) {
        timed++;
        continue;
      }
      checkDaysExist(component);
      checkParsedIntervals(component);
      const end = event.endDate;
      const days = Math.max(
        1,
        end ? Math.round((end.toUnixTime() - start.toUnixTime()) / 86400) : 1,
      );
      if (!event.isRecurring()) {
        // A single event gives all its days, whenever they are; one longer
        // than a calendar holds is refused before its days are listed.
        if (days > maxDates) throw tooMany(maxDates);
        const startMs = utcDay(start);
        add(
          coveredDays(start, days, {
            fromMs: startMs,
            untilMs: startMs + (days - 1) * DAY_MS,
          }),
        );
        continue;
      }
      const isReal = realOccurrences(component, start);
      const occurrences = event.iterator();
      for (
        let next = nextOccurrence(occurrences);
        next && utcDay(next) <= untilMs;
        next = nextOccurrence(occurrences)
      ) {
        if (++examined > MAX_OCCURRENCES_EXAMINED) {
          throw new TooManyDatesError(
            `the file's recurring events need more than ${MAX_OCCURRENCES_EXAMINED} occurrences walked to reach ${keyOfUtc(new Date(untilMs))}; give them a later DTSTART, an UNTIL or a COUNT`,
          );
        }
        if (!isReal(next)) continue;
        add(coveredDays(next, days, recurringWindow));
      }
    }
  });
  const sorted = [...dates].sort();
  const outside = sorted.find(day => !isCalendarDate(day));
  if (outside !== undefined) {
    throw new NotICalendarError(
      `the file gives the day ${outside}, which a calendar cannot hold (years 0001 to 9999)`,
    );
  }
  return {dates: sorted, timed_events_ignored: timed};
}
