import type {AnyObject} from '@loopback/repository';
import {HttpErrors} from '@loopback/rest';
import type {CrudHooks, HookContext} from '../crud/crud-resource';
import type {Calendar, Scheduler} from '../models';
import {calendarRuleErrors} from '../validation/calendar-rules';
import {validationError} from '../validation/validation-error';
import {repositoryOf} from './hook-helpers';

const SHOWN = 50;

/** Dates are kept sorted and once each: an import may repeat a day. */
export function tidyDates(dates: string[]): string[] {
  return [...new Set(dates)].sort();
}

function assertValid(record: AnyObject): void {
  const errors = calendarRuleErrors(record);
  if (errors.length > 0) throw validationError(errors);
}

function tidy<T extends AnyObject>(record: T): T {
  return Array.isArray(record.dates)
    ? {...record, dates: tidyDates(record.dates as string[])}
    : record;
}

/** The schedulers (up to SHOWN + 1) whose calendar_ids name `calendarId`. */
export async function schedulersUsingCalendar(
  ctx: HookContext,
  calendarId: number,
): Promise<number[]> {
  const schedulers = await repositoryOf<Scheduler>(ctx, 'Scheduler');
  const rows = (await schedulers.execute(
    `SELECT id FROM scheduler WHERE calendar_ids @> $1::jsonb ORDER BY id LIMIT $2`,
    [JSON.stringify([calendarId]), SHOWN + 1],
  )) as Array<{id: number}>;
  return rows.map(row => row.id);
}

export const calendarHooks: CrudHooks<Calendar> = {
  async beforeCreate(body) {
    assertValid(body);
    return tidy(body);
  },

  async beforeUpdate(patch, current) {
    assertValid({...current.toJSON(), ...patch});
    return tidy(patch);
  },

  /** 409 naming the schedulers that still follow the calendar. */
  async beforeDelete(current, ctx) {
    const ids = await schedulersUsingCalendar(ctx, current.id!);
    if (ids.length === 0) return;
    const shown = ids.slice(0, SHOWN);
    const more = ids.length > SHOWN ? ' and more' : '';
    throw Object.assign(
      new HttpErrors.Conflict(
        `Calendar ${current.id} is still used by scheduler${shown.length > 1 ? 's' : ''} ${shown.join(', ')}${more}: remove it from their calendar_ids first`,
      ),
      {
        details: [
          {
            path: '/id',
            code: 'inUse',
            message: `used by scheduler${shown.length > 1 ? 's' : ''} ${shown.join(', ')}${more}`,
            info: {scheduler_ids: shown},
          },
        ],
      },
    );
  },
};
