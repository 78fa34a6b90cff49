import {HttpErrors} from '@loopback/rest';
import {STATUS_CODES} from 'node:http';
import {CLIENT_CLOSED_REQUEST} from '../process/client-gone';

/** One entry of `error.details`: which field is wrong and why. */
export interface ErrorDetail {
  path: string;
  code: string;
  message: string;
  info?: object;
}

/** What the client sees; built from any thrown value by `toHttpError`. */
export interface HttpErrorBody {
  statusCode: number;
  name: string;
  message: string;
  details?: ErrorDetail[];
}

interface ErrorLike {
  name?: string;
  message?: string;
  code?: string | number;
  status?: number;
  statusCode?: number;
  details?: unknown;
  constraint?: string;
  expose?: boolean;
}

/**
 * PostgreSQL error codes caused by the caller's data rather than by us:
 * unique (23505), foreign key (23503), not null (23502) and check (23514)
 * violations, plus data exceptions such as an out-of-range integer (22003).
 */
const CLIENT_DATA_ERRORS: Record<string, string> = {
  '23505': 'A record with the same unique value already exists',
  '23503': 'The record refers to a missing record, or is still referred to',
  '23502': 'A required value is missing',
  '23514': 'The record breaks a consistency rule',
  '22003': 'A numeric value is out of range',
  '22007': 'A date or time value is invalid',
  '22008': 'A date or time value is out of range',
  '22P02': 'A value has the wrong format',
};

/**
 * Every other code of SQLSTATE class 22 ("data exception") is a value the
 * caller sent that the column or operator cannot take: a date whose zone
 * offset is out of range (22009), a broken LIKE escape (22025) or regular
 * expression (2201B), a NUL character (22021)… The fuzzer found 22009 from a
 * number compared with a timestamp; the whole class is the caller's.
 */
const DATA_EXCEPTION = 'A value is not valid for its field';

function clientDataMessage(code: unknown): string | undefined {
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  return (
    CLIENT_DATA_ERRORS[code] ??
    (code.startsWith('22') ? DATA_EXCEPTION : undefined)
  );
}

/**
 * Database rules whose breach is about one field, named as the API's own
 * checks name it (they agree except at the edges: a zone ICU knows and
 * PostgreSQL's tz database does not).
 */
const CONSTRAINT_FIELDS: Record<
  string,
  {path: string; code: string; message: string}
> = {
  scheduler_timezone_known: {
    path: '/timezone',
    code: 'timezone',
    message:
      'unknown time zone: the database does not know it; use an IANA name such as Europe/Berlin',
  },
  scheduler_calendar_ids_exist: {
    path: '/calendar_ids',
    code: 'notFound',
    message:
      'calendar_ids names a calendar that does not exist (it was deleted meanwhile)',
  },
  scheduler_stay_alive_max: {
    path: '/stay_alive',
    code: 'stayAliveMax',
    message:
      'the installation has as many stay-alive schedulers as STAY_ALIVE_MAX allows',
  },
  webhook_per_owner_max: {
    path: '',
    code: 'webhooksPerOwnerMax',
    message:
      'you already have 50 webhooks, the most one owner may have: delete one first',
  },
};

/**
 * Database rules whose breach is a conflict with another record (409): the
 * trigger behind the API's own check, for the write that raced it.
 */
const CONSTRAINT_CONFLICTS: Record<string, string> = {
  calendar_in_use:
    'The calendar is still named in a scheduler’s calendar_ids: remove it from them first',
};

/** SQLSTATE of a statement cancelled by statement_timeout. */
const QUERY_CANCELED = '57014';

/** Status codes we answer with their standard names (499: nginx's, for a client gone). */
function standardName(statusCode: number): string {
  if (statusCode === CLIENT_CLOSED_REQUEST) return 'ClientClosedRequestError';
  const ErrorClass = (HttpErrors as unknown as Record<number, new () => Error>)[
    statusCode
  ];
  return ErrorClass ? new ErrorClass().name : 'InternalServerError';
}

/** Errors that carry a code instead of a status, such as juggler's "not found". */
const CODE_STATUS: Record<string, number> = {ENTITY_NOT_FOUND: 404};

function statusOf(err: ErrorLike): number | undefined {
  const status =
    err.statusCode ??
    err.status ??
    (typeof err.code === 'string' ? CODE_STATUS[err.code] : undefined);
  return Number.isInteger(status) && status! >= 400 && status! < 600
    ? status
    : undefined;
}

/** AJV reports unknown and missing fields at the object's path: name the field. */
function normaliseDetail(detail: ErrorDetail): ErrorDetail {
  const info = (detail.info ?? {}) as Record<string, unknown>;
  if (detail.code === 'additionalProperties' && info.additionalProperty) {
    const field = String(info.additionalProperty);
    return {
      ...detail,
      path: `${detail.path}/${field}`,
      message: `unknown field "${field}"`,
    };
  }
  if (detail.code === 'required' && info.missingProperty) {
    const field = String(info.missingProperty);
    return {
      ...detail,
      path: `${detail.path}/${field}`,
      message: `"${field}" is required`,
    };
  }
  return detail;
}

function detailsOf(err: ErrorLike): ErrorDetail[] | undefined {
  if (!Array.isArray(err.details)) return undefined;
  return (err.details as ErrorDetail[]).map(normaliseDetail);
}

/**
 * The one place that decides what a failed request answers. Client errors keep
 * their message; anything unexpected becomes a 500 that reveals nothing.
 */
export function toHttpError(error: unknown): HttpErrorBody {
  const err: ErrorLike =
    typeof error === 'object' && error !== null ? (error as ErrorLike) : {};
  const status = statusOf(err);
  if (status !== undefined && status < 500) {
    const details = detailsOf(err);
    return {
      statusCode: status,
      name: standardName(status),
      message: err.message ? err.message : standardName(status),
      ...(details ? {details} : {}),
    };
  }
  const field = err.constraint ? CONSTRAINT_FIELDS[err.constraint] : undefined;
  if (status === undefined && err.code === '23514' && field) {
    return {
      statusCode: 422,
      name: 'UnprocessableEntityError',
      message: field.message,
      details: [{path: field.path, code: field.code, message: field.message}],
    };
  }
  const conflict = err.constraint
    ? CONSTRAINT_CONFLICTS[err.constraint]
    : undefined;
  if (status === undefined && err.code === '23503' && conflict) {
    return {
      statusCode: 409,
      name: 'ConflictError',
      message: conflict,
      details: [{path: '/id', code: 'inUse', message: conflict}],
    };
  }
  const pgMessage = clientDataMessage(err.code);
  if (status === undefined && pgMessage) {
    return {
      statusCode: 422,
      name: 'UnprocessableEntityError',
      message: pgMessage,
      ...(err.constraint
        ? {
            details: [
              {
                path: '',
                code: `pg_${err.code}`,
                message: pgMessage,
                info: {constraint: err.constraint},
              },
            ],
          }
        : {}),
    };
  }
  if (status === undefined && err.code === QUERY_CANCELED) {
    return {
      statusCode: 503,
      name: 'ServiceUnavailableError',
      message:
        'The database did not answer within the statement timeout; narrow the filter or try again later',
    };
  }
  const statusCode = status ?? 500;
  return {
    statusCode,
    name: standardName(statusCode),
    // A 503 we raised on purpose (`expose`) says why; every other server
    // error reveals nothing.
    message:
      statusCode === 503 && err.expose === true && err.message
        ? err.message
        : (STATUS_CODES[statusCode] ?? 'Internal Server Error'),
  };
}
