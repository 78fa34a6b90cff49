import type {Request, Response} from '@loopback/rest';
import type {Logger} from './logger';
import {redactUrl} from './redact';

interface ErrorLike {
  message?: string;
  name?: string;
  code?: string | number;
  status?: number;
  statusCode?: number;
  stack?: string;
}

/** Longer paths and URLs are cut in log records: a 16 KiB URL is not worth three log lines of it. */
export const MAX_LOGGED_URL_LENGTH = 2048;

function capped(text: string): string {
  return text.length > MAX_LOGGED_URL_LENGTH
    ? `${text.slice(0, MAX_LOGGED_URL_LENGTH)}...[${text.length - MAX_LOGGED_URL_LENGTH} more characters]`
    : text;
}

function requestFields(request: Request) {
  return {
    method: request.method,
    path: capped(request.originalUrl.split('?')[0]),
    url: capped(redactUrl(request.originalUrl)),
    ip: request.ip ?? request.socket.remoteAddress,
    user_agent: request.get('user-agent'),
  };
}

/** Refusals the client should look into (credentials, permission, rate). */
const WARN_STATUSES = new Set([401, 403, 429]);

/**
 * How loud a failed request is: a server fault is an error, a caller's
 * mistake is not (a scanner or a typo must not fire an error-rate alert).
 */
export function failureLevel(statusCode: number): 'error' | 'warn' | 'info' {
  if (statusCode >= 500) return 'error';
  return WARN_STATUSES.has(statusCode) ? 'warn' : 'info';
}

/**
 * The three request records of the spec: `Incoming request` when it starts,
 * then exactly one of `Request completed` or `Request failed` (at the level
 * `failureLevel` gives its status).
 */
export function startRequestLog(logger: Logger, request: Request) {
  const started = process.hrtime.bigint();
  const fields = requestFields(request);
  const elapsedMs = () =>
    Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
  logger.info('Incoming request', fields);

  return {
    completed(response: Response): void {
      logger.info('Request completed', {
        ...fields,
        status_code: response.statusCode,
        duration_ms: elapsedMs(),
        status: 'success',
      });
    },
    failed(error: unknown, statusCode: number): void {
      const err: ErrorLike =
        typeof error === 'object' && error !== null
          ? (error as ErrorLike)
          : {message: String(error)};
      const level = failureLevel(statusCode);
      logger.log(level, 'Request failed', {
        ...fields,
        error: err.message,
        error_name: err.name,
        error_code: err.statusCode ?? err.status ?? err.code ?? statusCode,
        status_code: statusCode,
        // A stack tells about our code, so only for server faults.
        ...(level === 'error' ? {stack: err.stack} : {}),
        duration_ms: elapsedMs(),
        status: 'error',
      });
    },
  };
}
