import {Entity, model, property} from '@loopback/repository';
import {idColumn, textColumn, textListColumn, timestampColumn} from './columns';

/** The most dates a calendar holds: five years of a busy holiday feed, and more. */
export const MAX_CALENDAR_DATES = 20_000;
/** The most `times` expressions a calendar holds. */
export const MAX_CALENDAR_TIMES = 100;

/**
 * A business calendar: schedulers that name it skip the fires it blacks out
 * (`blackout`) or does not allow (`allowed`). Read in its own time zone.
 */
@model({
  name: 'Calendar',
  settings: {strict: true, postgresql: {schema: 'public', table: 'calendar'}},
})
export class Calendar extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('name', {
      required: true,
      description: 'Unique name, e.g. UK bank holidays',
      jsonSchema: {minLength: 1, maxLength: 200},
    }),
  )
  name: string;

  @property(textColumn('description', {jsonSchema: {maxLength: 2000}}))
  description?: string | null;

  @property(
    textColumn('time_zone', {
      required: true,
      description:
        'IANA time zone its dates and times are read in, e.g. Europe/London',
      jsonSchema: {minLength: 1, maxLength: 64},
    }),
  )
  time_zone: string;

  @property(
    textColumn('kind', {
      required: true,
      description:
        'blackout: fires it matches are skipped; allowed: fires it does not match are skipped. Blackout wins over allowed.',
      jsonSchema: {enum: ['blackout', 'allowed']},
    }),
  )
  kind: string;

  @property(
    textListColumn(
      'dates',
      {pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', minLength: 10, maxLength: 10},
      MAX_CALENDAR_DATES,
      {
        description:
          'Whole days (YYYY-MM-DD) in the calendar zone: every minute of each is matched',
      },
    ),
  )
  dates?: string[];

  @property(
    textListColumn(
      'times',
      {minLength: 1, maxLength: 200},
      MAX_CALENDAR_TIMES,
      {
        description:
          'Five-field cron expressions in the calendar zone: every minute one matches is matched, e.g. "* 2-3 * * 0" is Sunday 02:00-03:59',
      },
    ),
  )
  times?: string[];

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Calendar>) {
    super(data);
  }
}
