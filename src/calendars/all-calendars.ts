import type {Pool} from 'pg';
import {
  CalendarSpec,
  compileCalendar,
  CompiledCalendar,
} from '../scheduling/calendar-match';
import type {CronCache} from '../scheduling/compiled-cron';
import {isValidTimeZone} from '../scheduling/wall-clock';

export interface LoadedCalendars {
  calendars: Map<number, CompiledCalendar>;
  /** Calendars with a stored entry that cannot be read (entry left out). */
  problems: Array<{calendarId: number; problems: string[]}>;
  /**
   * Every calendar's id and row version: equal between two loads only when
   * no calendar was added, changed or deleted in between.
   */
  version: string;
}

/**
 * Every calendar, read now and compiled: one query and one compilation per
 * calendar, however many schedulers share it. Calendars are few (dozens),
 * schedulers many: loading them all is cheaper than collecting the ids
 * thousands of schedulers name. One whose zone is unknown (written around
 * the API) is left out, as the producer ignores it.
 */
export async function loadAllCalendars(
  pool: Pool,
  cache: CronCache,
): Promise<LoadedCalendars> {
  const {rows} = await pool.query<CalendarSpec & {version: string}>(
    `SELECT id, name, kind, time_zone, dates, times, xmin::text AS version
       FROM calendar ORDER BY id`,
  );
  const loaded: LoadedCalendars = {
    calendars: new Map(),
    problems: [],
    version: rows.map(row => `${row.id}:${row.version}`).join(','),
  };
  for (const row of rows) {
    if (!isValidTimeZone(row.time_zone)) {
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
