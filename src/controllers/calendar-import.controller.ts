import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {
  HttpErrors,
  oas,
  post,
  Request,
  requestBody,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import {
  IMPORT_YEARS,
  NotICalendarError,
  TooManyDatesError,
} from '../calendars/ical-dates';
import {
  importAllDayDatesIsolated,
  IMPORT_BUDGET_MS,
  ImportStartTooSlowError,
  ImportTooSlowError,
} from '../calendars/ical-import-isolated';
import {ImportsBusyError} from '../calendars/import-slots';
import {auditedWrite, visible} from '../crud/audited-write';
import {idParam} from '../crud/crud-controller.factory';
import type {EntityRepository} from '../crud/repositories';
import {ProducerBindings} from '../keys';
import {Calendar, MAX_CALENDAR_DATES} from '../models';
import {tidyDates} from '../resources/calendar.hooks';
import {fieldError, validationError} from '../validation/validation-error';

/** The largest iCalendar body accepted (the text body parser's limit). */
export const MAX_ICALENDAR_BYTES = 1024 * 1024;

export interface CalendarImportResult {
  /** Days the file added that the calendar did not hold yet. */
  added: number;
  /** Days the calendar holds after the import. */
  dates_total: number;
  timed_events_ignored: number;
}

/** POST /calendars/{id}/import: a holiday feed's all-day events become dates. */
@oas.tags('Calendar')
@authenticate(...BEARER_STRATEGIES)
export class CalendarImportController {
  constructor(
    @inject('repositories.CalendarRepository')
    private readonly calendars: EntityRepository<Calendar>,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(ProducerBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {}

  @post('/calendars/{id}/import', {
    summary: 'Import an iCalendar file into a calendar',
    description: `Adds the whole days of the file's all-day events to the calendar's dates; recurring events (RRULE, RDATE, EXDATE) are expanded from today for ${IMPORT_YEARS} years. Events with a time of day are counted and left out. A body that is not iCalendar is 422 (path /body); over 1 MiB is 413. Audited as an update of the calendar. Roles: admin, operator.`,
    responses: {
      '200': {
        description: 'Imported',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'CalendarImportResult',
              required: ['added', 'dates_total', 'timed_events_ignored'],
              properties: {
                added: {type: 'integer', minimum: 0},
                dates_total: {type: 'integer', minimum: 0},
                timed_events_ignored: {type: 'integer', minimum: 0},
              },
            },
          },
        },
      },
    },
  })
  @oas.response(404, {description: 'No calendar has this id'})
  @oas.response(429, {
    description:
      'You already have two imports running or waiting: Retry-After says when to try again',
  })
  @oas.response(503, {
    description:
      'Too many imports under way (each parses for up to 5 s), or the server too busy to start one: Retry-After says when to try again',
  })
  @authorize({allowedRoles: OPERATORS})
  async importICalendar(
    @idParam(Calendar) id: number,
    @requestBody({
      required: true,
      description: 'An iCalendar file (RFC 5545), at most 1 MiB',
      content: {
        'text/calendar': {
          schema: {type: 'string', maxLength: MAX_ICALENDAR_BYTES},
        },
      },
    })
    body: string,
  ): Promise<CalendarImportResult> {
    const current = await this.calendars.findById(id).catch(() => {
      throw new HttpErrors.NotFound(`Entity not found: Calendar with id ${id}`);
    });
    const imported = await this.parse(body);
    // The merge reads the dates under a row lock in the write's transaction:
    // two imports (or an import and a PATCH) at once both keep their days.
    const merged = await auditedWrite(
      this.calendars,
      {
        actorUserId: this.user.id,
        action: 'update',
        entity: 'calendar',
        request: this.request,
      },
      async options => {
        const [locked] = (await this.calendars.execute(
          'SELECT dates FROM calendar WHERE id = $1 FOR UPDATE',
          [id],
          options,
        )) as Array<{dates: string[]}>;
        if (!locked) {
          throw new HttpErrors.NotFound(
            `Entity not found: Calendar with id ${id}`,
          );
        }
        const dates = tidyDates([...locked.dates, ...imported.dates]);
        if (dates.length > MAX_CALENDAR_DATES) {
          throw validationError([
            fieldError(
              'body',
              'tooManyDates',
              `the calendar would hold ${dates.length} days, more than ${MAX_CALENDAR_DATES}`,
            ),
          ]);
        }
        await this.calendars.updateById(id, {dates}, options);
        const before = {...visible(current), dates: locked.dates};
        return {
          id,
          before,
          after: {...before, dates},
          result: {before: locked.dates.length, after: dates.length},
        };
      },
    );
    return {
      added: merged.after - merged.before,
      dates_total: merged.after,
      timed_events_ignored: imported.timed_events_ignored,
    };
  }

  private async parse(body: unknown) {
    if (typeof body !== 'string' || body.length === 0) {
      throw validationError([
        fieldError('body', 'iCalendar', 'the body must be an iCalendar file'),
      ]);
    }
    try {
      // In a worker with a time budget: ical.js loops forever on some rules.
      return await importAllDayDatesIsolated(
        body,
        this.clock(),
        MAX_CALENDAR_DATES,
        undefined,
        `user:${this.user.id}`,
      );
    } catch (error) {
      if (
        error instanceof NotICalendarError ||
        error instanceof TooManyDatesError ||
        error instanceof ImportTooSlowError
      ) {
        throw validationError([fieldError('body', 'iCalendar', error.message)]);
      }
      if (error instanceof ImportsBusyError && error.own) {
        throw Object.assign(new HttpErrors.TooManyRequests(error.message), {
          headers: {'Retry-After': String(IMPORT_BUDGET_MS / 1000)},
        });
      }
      if (
        error instanceof ImportsBusyError ||
        error instanceof ImportStartTooSlowError
      ) {
        throw Object.assign(new HttpErrors.ServiceUnavailable(error.message), {
          expose: true,
          headers: {'Retry-After': String(IMPORT_BUDGET_MS / 1000)},
        });
      }
      throw error;
    }
  }
}
