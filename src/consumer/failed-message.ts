import {storableText, textOf} from '../logging/bounded-text';
import type {FailedTaskRecord} from '../database/failed-task-store';

/** Most characters of an unreadable body kept with its failed task. */
export const MAX_KEPT_RAW = 65_536;
/** Most characters of a failed reason kept and logged (a 5 MB one was kept whole). */
export const MAX_REASON_LENGTH = 10_000;
/** Longest task type taken from a failed message (the real ones are short words). */
const MAX_TYPE_LENGTH = 100;
/** Longest text of one field in the PERMANENTLY FAILED TASK line. */
const MAX_LOGGED_FIELD = 500;
const INT4_MAX = 2_147_483_647;

/** A failed message's body: what the task consumer parked, or whatever arrived. */
export type FailedBody = Record<string, unknown>;

/**
 * The body as an object whatever arrived: a JSON object as it is; anything
 * else (not JSON, `null`, a number, a list) as its raw text, cut.
 */
export function failedBodyOf(content: Buffer): FailedBody {
  const text = content.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
    return parsed as FailedBody;
  return {
    raw: storableText(text.slice(0, MAX_KEPT_RAW)),
    failed_reason: 'unreadable failed message',
  };
}

const int4OrNull = (value: unknown) =>
  Number.isSafeInteger(value) && Math.abs(value as number) <= INT4_MAX
    ? (value as number)
    : null;

/**
 * The payload as jsonb text: the body whole with its strings made storable,
 * or, when it cannot be written as JSON (nested too deep for the engine's
 * stack), its raw text cut.
 */
function payloadOf(body: FailedBody, content: Buffer): string {
  try {
    return JSON.stringify(storableValue(body));
  } catch {
    return JSON.stringify({
      raw: storableText(content.toString('utf8').slice(0, MAX_KEPT_RAW)),
      note: 'the body could not be kept whole (nested too deep)',
    });
  }
}

/** `value` with every string and every key storable (a NUL in a key failed the store too). */
function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        storableText(key),
        storableValue(inner),
      ]),
    );
  }
  return value;
}

/**
 * An ISO 8601 instant PostgreSQL takes: "1" is a date to JavaScript, and
 * -271821-04-20 one out of PostgreSQL's range, and each failed the store.
 */
const STORABLE_INSTANT =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** The failed task to keep, from a failed message; every field bounded, never throws. */
export function failedRecordOf(
  body: FailedBody,
  content: Buffer,
  headers: Record<string, unknown>,
  now: Date,
): FailedTaskRecord {
  const executionId = Number(headers['x-execution-id']);
  const type = typeof body.type === 'string' ? storableText(body.type) : null;
  return {
    executionId:
      Number.isSafeInteger(executionId) && executionId > 0 ? executionId : null,
    schedulerId: int4OrNull(body.scheduler_id),
    type: type !== null && type.length <= MAX_TYPE_LENGTH ? type : null,
    taskId: int4OrNull(body.id),
    paramsScheduler:
      typeof body.params_scheduler === 'string'
        ? storableText(body.params_scheduler)
        : null,
    payload: payloadOf(body, content),
    failedReason:
      textOf(body.failed_reason ?? 'unknown', MAX_REASON_LENGTH) ?? 'unknown',
    retryCount: Math.max(0, int4OrNull(body.retry_count) ?? 0),
    failedAt:
      typeof body.failed_at === 'string' &&
      STORABLE_INSTANT.test(body.failed_at) &&
      !Number.isNaN(Date.parse(body.failed_at))
        ? body.failed_at
        : now.toISOString(),
  };
}

/** A number or a flag as it is, anything else as short text. */
function loggable(value: unknown): unknown {
  return typeof value === 'number' ||
    typeof value === 'boolean' ||
    value === null
    ? value
    : textOf(value, MAX_LOGGED_FIELD);
}

/** The PERMANENTLY FAILED TASK line's fields: short, whatever the body held. */
export function failedLogFields(
  body: FailedBody,
  record: FailedTaskRecord,
): Record<string, unknown> {
  return {
    type: loggable(body.type),
    id: loggable(body.id),
    scheduler_id: loggable(body.scheduler_id),
    retry_count: record.retryCount,
    failed_at: record.failedAt,
    failed_reason: record.failedReason,
  };
}
