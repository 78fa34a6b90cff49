import type {EntityRepository} from '../crud/repositories';
import type {Calendar} from '../models';
import {compileCalendar, CompiledCalendar} from '../scheduling/calendar-match';
import {CronCache} from '../scheduling/compiled-cron';
import {isValidTimeZone} from '../scheduling/wall-clock';

/**
 * The calendars `ids` name, read now and compiled, in the order given (the
 * order the producer judges them in); ids that name none, and calendars in
 * a zone that cannot be read, are left out, as the producer leaves them.
 */
export async function compiledCalendars(
  calendars: EntityRepository<Calendar>,
  ids: readonly number[],
): Promise<CompiledCalendar[]> {
  if (ids.length === 0) return [];
  const rows = await calendars.find({where: {id: {inq: [...ids]}}});
  const cache = new CronCache();
  const byId = new Map(
    // A zone the producer cannot read (a row written around the API) makes
    // it ignore the calendar; so do the previews.
    rows
      .filter(row => isValidTimeZone(row.time_zone))
      .map(row => [
        row.id!,
        compileCalendar(
          {
            id: row.id!,
            name: row.name,
            kind: row.kind,
            time_zone: row.time_zone,
            dates: row.dates ?? [],
            times: row.times ?? [],
          },
          cache,
        ).calendar,
      ]),
  );
  return ids
    .map(id => byId.get(id))
    .filter((c): c is CompiledCalendar => c !== undefined);
}
