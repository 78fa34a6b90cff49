import type {Pool} from 'pg';
import {
  CalendarSpec,
  compileCalendar,
  CompiledCalendar,
} from '../scheduling/calendar-match';
import type {CronCache} from '../scheduling/compiled-cron';
import {isValidTimeZone} from '../scheduling/wall-clock';
import type {Candidate} from './candidate';

export interface LoadedCalendars {
  calendars: Map<number, CompiledCalendar>;
  /** Calendars with a stored entry the producer cannot read (logged, entry left out). */
  problems: Array<{calendarId: number; problems: string[]}>;
}

/**
 * Every calendar, read and compiled afresh on every tick: an edit applies
 * at the next tick in every producer, and no cache outlives the tick. One
 * query and one compilation per calendar, however many schedulers share it.
 * Calendars are few (dozens), schedulers many: loading them all is cheaper
 * than collecting the ids 100,000 candidates name.
 */
export async function loadCalendars(
  pool: Pool,
  candidates: Candidate[],
  cache: CronCache,
): Promise<LoadedCalendars> {
  const loaded: LoadedCalendars = {calendars: new Map(), problems: []};
  if (candidates.length === 0) return loaded;
  const {rows} = await pool.query<CalendarSpec>(
    `SELECT id, name, kind, time_zone, dates, times FROM calendar`,
  );
  for (const row of rows) {
    if (!isValidTimeZone(row.time_zone)) {
      // Unreadable zone (written around the API): the calendar is ignored.
      loaded.problems.push({
        calendarId: row.id,
        problems: [`unknown time zone "${row.time_zone}"`],
      });
      continue;
    }
    const {calendar, problems} = compileCalendar(row, cache);
    loaded.calendars.set(row.id, calendar);
    if (problems.length > 0)
      loaded.problems.push({calendarId: row.id, problems});
  }
  return loaded;
}
