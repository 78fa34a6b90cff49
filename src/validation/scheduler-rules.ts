import {workerParamKeyProblems} from '../executors/worker-params';
import type {ErrorDetail} from '../middleware/error-mapping';
import {compileCron, InvalidCronError} from '../scheduling/compiled-cron';
import {earliestOneTimeFire} from '../scheduling/one-time-fire';
import {isValidTimeZone} from '../scheduling/wall-clock';
import {fieldError} from './validation-error';

/** The fields the cross-field rules look at, as stored or as merged by PATCH. */
export interface SchedulerShape {
  schedule?: string | null;
  timezone?: string | null;
  date_time?: Date | string | null;
  stay_alive?: boolean | null;
  report_id?: number | null;
  worker_id?: number | null;
  reminder_id?: number | null;
  http_target_id?: number | null;
  params?: Record<string, unknown> | null;
  starts_at?: Date | string | null;
  ends_at?: Date | string | null;
}

/** The longest reminder message, as the Reminder model allows. */
export const MAX_REMINDER_MESSAGE_LENGTH = 10_000;

const TASK_FIELDS = [
  'report_id',
  'worker_id',
  'reminder_id',
  'http_target_id',
] as const;
const TASK_FIELD_LIST = TASK_FIELDS.join(', ');

const present = (value: unknown) => value !== undefined && value !== null;

function taskKindErrors(record: SchedulerShape): ErrorDetail[] {
  const given = TASK_FIELDS.filter(field => present(record[field]));
  if (given.length === 1) return [];
  const message =
    given.length === 0
      ? `exactly one of ${TASK_FIELD_LIST} is required`
      : `exactly one of ${TASK_FIELD_LIST} is allowed, got ${given.join(', ')}`;
  const fields = given.length === 0 ? TASK_FIELDS : given;
  return fields.map(field => fieldError(field, 'taskKind', message));
}

function timingErrors(record: SchedulerShape): ErrorDetail[] {
  const hasSchedule = present(record.schedule);
  const hasDateTime = present(record.date_time);
  if (record.stay_alive) {
    const errors: ErrorDetail[] = [];
    if (!present(record.worker_id)) {
      errors.push(
        fieldError(
          'worker_id',
          'stayAlive',
          'a stay-alive scheduler needs worker_id',
        ),
      );
    }
    for (const field of ['schedule', 'date_time'] as const) {
      if (present(record[field])) {
        errors.push(
          fieldError(
            field,
            'stayAlive',
            `a stay-alive scheduler runs continuously and takes no ${field}`,
          ),
        );
      }
    }
    return errors;
  }
  if (hasSchedule && hasDateTime) {
    const message = 'give either schedule or date_time, not both';
    return [
      fieldError('schedule', 'timing', message),
      fieldError('date_time', 'timing', message),
    ];
  }
  if (!hasSchedule && !hasDateTime) {
    const message =
      'either schedule (recurring) or date_time (one-time) is required';
    return [
      fieldError('schedule', 'timing', message),
      fieldError('date_time', 'timing', message),
    ];
  }
  return [];
}

function scheduleErrors(record: SchedulerShape): ErrorDetail[] {
  if (typeof record.schedule !== 'string') return [];
  try {
    compileCron(record.schedule);
    return [];
  } catch (error) {
    if (!(error instanceof InvalidCronError)) throw error;
    return error.problems.map(message =>
      fieldError('schedule', 'cron', message),
    );
  }
}

/**
 * Rules that JSON schema cannot express well. Applied to the whole record, so
 * a PATCH is judged by what the scheduler would become.
 */
function timezoneErrors(record: SchedulerShape): ErrorDetail[] {
  if (typeof record.timezone !== 'string' || isValidTimeZone(record.timezone)) {
    return [];
  }
  return [
    fieldError(
      'timezone',
      'timezone',
      `unknown time zone "${record.timezone}"; use an IANA name such as Europe/Berlin`,
    ),
  ];
}

/** A worker's params become its arguments: only plain names as keys. */
function workerParamErrors(record: SchedulerShape): ErrorDetail[] {
  if (!present(record.worker_id) || !record.params) return [];
  return workerParamKeyProblems(record.params).map(message =>
    fieldError('params', 'workerParamKey', message),
  );
}

/** A reminder's `params.message` overrides its message: the same limits apply. */
function reminderMessageErrors(record: SchedulerShape): ErrorDetail[] {
  if (!present(record.reminder_id)) return [];
  const message = record.params?.message;
  if (message === undefined) return [];
  if (
    typeof message === 'string' &&
    message.length >= 1 &&
    message.length <= MAX_REMINDER_MESSAGE_LENGTH
  ) {
    return [];
  }
  return [
    fieldError(
      'params/message',
      'reminderMessage',
      `a reminder's params.message must be plain text of 1 to ${MAX_REMINDER_MESSAGE_LENGTH} characters`,
    ),
  ];
}

/** The active window must be one: ends_at after starts_at. */
function activeWindowErrors(record: SchedulerShape): ErrorDetail[] {
  if (!present(record.starts_at) || !present(record.ends_at)) return [];
  const starts = new Date(record.starts_at!).getTime();
  const ends = new Date(record.ends_at!).getTime();
  if (!Number.isFinite(starts) || !Number.isFinite(ends) || ends > starts) {
    return [];
  }
  return [
    fieldError(
      'ends_at',
      'activeWindow',
      'ends_at must lie after starts_at (the active window would be empty)',
    ),
  ];
}

export function schedulerRuleErrors(record: SchedulerShape): ErrorDetail[] {
  return [
    ...activeWindowErrors(record),
    ...reminderMessageErrors(record),
    ...taskKindErrors(record),
    ...workerParamErrors(record),
    ...timingErrors(record),
    ...scheduleErrors(record),
    ...timezoneErrors(record),
  ];
}

/** The timing rules alone (schedule or date_time, zone): what a preview checks. */
export function timingRuleErrors(record: SchedulerShape): ErrorDetail[] {
  return [
    ...timingErrors(record),
    ...scheduleErrors(record),
    ...timezoneErrors(record),
  ];
}

/**
 * A one-time scheduler must lie ahead: a date_time before
 * `earliestOneTimeFire` would never fire (the producers' catch-up window
 * decides whether the current minute still counts).
 */
export function pastDateTimeErrors(
  dateTime: Date | string | null | undefined,
  now: Date,
  catchUpMinutes: number,
): ErrorDetail[] {
  if (dateTime === undefined || dateTime === null) return [];
  const instant = new Date(dateTime);
  if (!Number.isFinite(instant.getTime())) return [];
  const earliest = earliestOneTimeFire(now, catchUpMinutes);
  if (instant.getTime() >= earliest.getTime()) return [];
  const which =
    catchUpMinutes > 0
      ? 'the start of the current minute'
      : 'the start of a minute whose tick is still to come: with CRON_CATCHUP_MINUTES=0 no tick fires a minute that has begun';
  return [
    fieldError(
      'date_time',
      'past',
      `date_time ${instant.toISOString()} is in the past; a one-time scheduler needs a moment at or after ${earliest.toISOString()} (${which})`,
    ),
  ];
}
