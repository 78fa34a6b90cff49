import {AsyncLocalStorage} from 'node:async_hooks';
import {randomUUID} from 'node:crypto';

/**
 * The request a piece of code runs for: every log record written inside it
 * carries its `request_id` (see logger.ts), without passing it around.
 */
const context = new AsyncLocalStorage<{requestId: string}>();

/** The id of the request being served here, if any. */
export function currentRequestId(): string | undefined {
  return context.getStore()?.requestId;
}

/** Runs `work` (and everything it awaits or schedules) as part of the request. */
export function withRequestId<T>(requestId: string, work: () => T): T {
  return context.run({requestId}, work);
}

/**
 * Runs `work` outside any request: for what a request merely happens to
 * start but outlives it (a lazily opened broker connection, its reconnects,
 * its timers), whose records must not carry that one request's id forever.
 */
export function outsideRequest<T>(work: () => T): T {
  return context.exit(work);
}

/** The longest X-Request-Id taken from a caller. */
export const MAX_REQUEST_ID_LENGTH = 128;

/**
 * Letters, digits and the punctuation of UUIDs, ULIDs, trace ids and base64
 * ids; nothing that could break a log line, a header or a query.
 */
const SANE_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:=+/-]*$/;

export function isSaneRequestId(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= MAX_REQUEST_ID_LENGTH &&
    SANE_REQUEST_ID.test(value)
  );
}

/**
 * The caller's id when it is a sane token, else a new one; `refused` says
 * an id was given and replaced (the caller may want to know why).
 */
export function requestIdFor(given: string | string[] | undefined): {
  requestId: string;
  refused: boolean;
} {
  if (isSaneRequestId(given)) return {requestId: given, refused: false};
  return {requestId: randomUUID(), refused: given !== undefined};
}
