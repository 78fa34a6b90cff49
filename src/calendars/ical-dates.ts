import ICAL from 'ical.js';

/** How far ahead recurring events are expanded. */
export const IMPORT_YEARS = 5;

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

/** The days an all-day occurrence starting at `start` covers (DTEND is exclusive). */
function coveredDays(start: ICAL.Time, days: number): string[] {
  const first = Date.UTC(start.year, start.month - 1, start.day);
  const keys: string[] = [];
  for (let i = 0; i < days; i++)
    keys.push(keyOfUtc(new Date(first + i * DAY_MS)));
  return keys;
}

function parseCalendar(text: string): ICAL.Component {
  let root: ICAL.Component;
  try {
    root = new ICAL.Component(ICAL.parse(text));
  } catch (error) {
    throw new NotICalendarError(
      `the body is not iCalendar: ${(error as Error).message}`,
    );
  }
  if (root.name !== 'vcalendar') {
    throw new NotICalendarError(
      `the body is not iCalendar: it holds a ${root.name.toUpperCase()}, not a VCALENDAR`,
    );
  }
  return root;
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
  const root = parseCalendar(text);
  const from = keyOfUtc(new Date(now.getTime() - DAY_MS));
  const untilDate = new Date(now.getTime());
  untilDate.setUTCFullYear(untilDate.getUTCFullYear() + years);
  const until = keyOfUtc(untilDate);
  const dates = new Set<string>();
  let timed = 0;
  const add = (keys: string[]) => {
    for (const key of keys) dates.add(key);
    if (dates.size > maxDates) {
      throw new TooManyDatesError(
        `the file gives more than ${maxDates} days, more than a calendar holds`,
      );
    }
  };
  for (const component of root.getAllSubcomponents('vevent')) {
    const event = new ICAL.Event(component);
    const start = event.startDate;
    if (!start) continue;
    if (!start.isDate) {
      timed++;
      continue;
    }
    const end = event.endDate;
    const days = Math.max(
      1,
      end ? Math.round((end.toUnixTime() - start.toUnixTime()) / 86400) : 1,
    );
    if (!event.isRecurring()) {
      add(coveredDays(start, days));
      continue;
    }
    const occurrences = event.iterator();
    for (
      let next = occurrences.next();
      next && dayKey(next.year, next.month, next.day) <= until;
      next = occurrences.next()
    ) {
      const keys = coveredDays(next, days);
      add(keys.filter(key => key >= from && key <= until));
    }
  }
  return {dates: [...dates].sort(), timed_events_ignored: timed};
}
