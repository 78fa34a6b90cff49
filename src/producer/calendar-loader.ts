import type {Pool} from 'pg';
import {loadAllCalendars, LoadedCalendars} from '../calendars/all-calendars';
import type {CronCache} from '../scheduling/compiled-cron';
import type {Candidate} from './candidate';

export type {LoadedCalendars} from '../calendars/all-calendars';

/**
 * Every calendar, read and compiled afresh on every tick: an edit applies
 * at the next tick in every producer, and no cache outlives the tick. A tick
 * with no candidates reads none. Problems are logged by the caller.
 */
export async function loadCalendars(
  pool: Pool,
  candidates: Candidate[],
  cache: CronCache,
): Promise<LoadedCalendars> {
  if (candidates.length === 0)
    return {calendars: new Map(), problems: [], version: ''};
  return loadAllCalendars(pool, cache);
}
