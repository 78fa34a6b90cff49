import {inject, injectable, BindingScope, Provider} from '@loopback/core';
import {Reject, Request, Response} from '@loopback/rest';
import type {AppConfig} from '../config';
import {AppBindings} from '../keys';
import {toHttpError} from './error-mapping';
import {currentRequestId} from '../logging/request-context';

/** The thrown value kept on the response so the request log can describe it. */
export const FAILURE = Symbol('request.failure');

export interface RequestFailure {
  error: unknown;
  statusCode: number;
}

type ResponseWithFailure = Response & {[FAILURE]?: RequestFailure};

export function failureOf(response: Response): RequestFailure | undefined {
  return (response as ResponseWithFailure)[FAILURE];
}

/**
 * Writes `{"error": {...}}` for any thrown value. In development the original
 * error's stack is added as `error.stack`; in production never.
 */
export function writeErrorResponse(
  response: Response,
  error: unknown,
  includeStack: boolean,
): void {
  const body = toHttpError(error);
  (response as ResponseWithFailure)[FAILURE] = {
    error,
    statusCode: body.statusCode,
  };
  if (response.headersSent) {
    // Too late for a status line: end the broken response; the log keeps the error.
    response.end();
    return;
  }
  const stack =
    includeStack && error instanceof Error ? {stack: error.stack} : {};
  const headers = (error as {headers?: Record<string, string>})?.headers;
  if (headers && typeof headers === 'object') {
    if (body.statusCode < 500) response.set(headers);
    // A 503 tells when to come back; nothing else of a server error's.
    else if (body.statusCode === 503 && headers['Retry-After'])
      response.set('Retry-After', String(headers['Retry-After']));
  }
  const requestId = currentRequestId();
  response
    .status(body.statusCode)
    .type('application/json; charset=utf-8')
    .send(
      JSON.stringify({
        error: {
          ...body,
          ...(requestId === undefined ? {} : {request_id: requestId}),
          ...stack,
        },
      }),
    );
}

/** Replaces LoopBack's reject action so every error goes through one mapping. */
@injectable({scope: BindingScope.SINGLETON})
export class ErrorResponseProvider implements Provider<Reject> {
  constructor(@inject(AppBindings.CONFIG) private config: AppConfig) {}

  value(): Reject {
    const includeStack = this.config.nodeEnv === 'development';
    return ({response}: {request: Request; response: Response}, error: Error) =>
      writeErrorResponse(response, error, includeStack);
  }
}
