import type {ErrorDetail} from '../middleware/error-mapping';
import {compileCron, InvalidCronError} from '../scheduling/compiled-cron';
import {isValidTimeZone} from '../scheduling/wall-clock';
import {fieldError} from './validation-error';
import {isCalendarDate} from './calendar-date';

/** The fields the calendar rules look at, as stored or as merged by PATCH. */
export interface CalendarShape {
  time_zone?: string | null;
  dates?: unknown;
  times?: unknown;
}

function timeZoneErrors(record: CalendarShape): ErrorDetail[] {
  const zone = record.time_zone;
  if (typeof zone !== 'string' || isValidTimeZone(zone)) return [];
  return [
    fieldError(
      'time_zone',
      'timezone',
      `unknown time zone "${zone}"; use an IANA name such as Europe/London`,
    ),
  ];
}

function dateErrors(record: CalendarShape): ErrorDetail[] {
  if (!Array.isArray(record.dates)) return [];
  const errors: ErrorDetail[] = [];
  record.dates.forEach((date, index) => {
    if (!isCalendarDate(date)) {
      errors.push(
        fieldError(
          `dates/${index}`,
          'date',
          `"${String(date)}" is not a day of the calendar (YYYY-MM-DD)`,
        ),
      );
    }
  });
  return errors;
}

function timesErrors(record: CalendarShape): ErrorDetail[] {
  if (!Array.isArray(record.times)) return [];
  const errors: ErrorDetail[] = [];
  record.times.forEach((expression, index) => {
    try {
      compileCron(String(expression));
    } catch (error) {
      if (!(error instanceof InvalidCronError)) throw error;
      for (const problem of error.problems) {
        errors.push(fieldError(`times/${index}`, 'cron', problem));
      }
    }
  });
  return errors;
}

/** Rules the JSON schema cannot express: a known zone, real days, the cron dialect. */
export function calendarRuleErrors(record: CalendarShape): ErrorDetail[] {
  return [
    ...timeZoneErrors(record),
    ...dateErrors(record),
    ...timesErrors(record),
  ];
}
