import {wallTimeAt} from '../scheduling/wall-clock';
import {ReportInputError} from './report';

export interface Period {
  from: Date;
  to: Date;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;
const MAX_PERIOD_DAYS = 366;
const DAY_MS = 86_400_000;

/** The instant a calendar day starts in `timeZone` (DST-safe: corrected twice). */
export function startOfDay(
  year: number,
  month: number,
  day: number,
  timeZone: string,
): Date {
  const target = Date.UTC(year, month - 1, day);
  let guess = target;
  for (let i = 0; i < 2; i++) {
    const wall = wallTimeAt(new Date(guess), timeZone);
    const shown = Date.UTC(
      wall.year,
      wall.month - 1,
      wall.day,
      wall.hour,
      wall.minute,
    );
    guess += target - shown;
  }
  return new Date(guess);
}

/** `YYYY-MM-DD` (midnight in `timeZone`) or an ISO 8601 date-time with a zone. */
export function parseInstant(
  value: unknown,
  field: string,
  timeZone: string,
): Date {
  if (typeof value === 'string') {
    const day = DATE_ONLY.exec(value);
    if (day) {
      const [year, month, date] = [day[1], day[2], day[3]].map(Number);
      const check = new Date(Date.UTC(year, month - 1, date));
      if (check.getUTCMonth() === month - 1 && check.getUTCDate() === date) {
        return startOfDay(year, month, date, timeZone);
      }
    } else if (DATE_TIME.test(value) && !isNaN(Date.parse(value))) {
      return new Date(value);
    }
  }
  throw new ReportInputError(
    `report_params.${field} must be a date (YYYY-MM-DD, read in CRON_TZ) or an ISO 8601 date-time with a zone`,
    [{path: `/report_params/${field}`, code: 'format', message: 'not a date'}],
  );
}

/**
 * `from` (inclusive) and `to` (exclusive); by default yesterday in CRON_TZ,
 * so a daily scheduler reports the day before without any params.
 */
export function parsePeriod(
  params: Record<string, unknown>,
  timeZone: string,
  now: Date,
): Period {
  const wall = wallTimeAt(now, timeZone);
  const today = startOfDay(wall.year, wall.month, wall.day, timeZone);
  const yesterday = startOfDay(wall.year, wall.month, wall.day - 1, timeZone);
  const from =
    params.from === undefined
      ? yesterday
      : parseInstant(params.from, 'from', timeZone);
  const to =
    params.to === undefined ? today : parseInstant(params.to, 'to', timeZone);
  if (to.getTime() <= from.getTime()) {
    throw new ReportInputError('report_params.to must be after from', [
      {path: '/report_params/to', code: 'range', message: 'must be after from'},
    ]);
  }
  if (to.getTime() - from.getTime() > MAX_PERIOD_DAYS * DAY_MS) {
    throw new ReportInputError(
      `A report period may span at most ${MAX_PERIOD_DAYS} days`,
      [{path: '/report_params/to', code: 'range', message: 'period too long'}],
    );
  }
  return {from, to};
}
