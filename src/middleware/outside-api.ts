import {HttpErrors, Request, Response} from '@loopback/rest';
import express from 'express';
import {AsyncResource} from 'node:async_hooks';
import {requestIdFor, withRequestId} from '../logging/request-context';
import {REQUEST_ID_HEADER} from './request-id.middleware';
import type {Logger} from '../logging/logger';
import {startRequestLog} from '../logging/request-log';
import {failureOf, writeErrorResponse} from './error-response';
import {consoleStatic} from './console-static';

export interface OutsideApiOptions {
  /** The same security headers as the API's responses. */
  securityHeaders: express.RequestHandler;
  /** The built operations console (index.html and its hashed assets). */
  consoleDir: string;
  logger: Logger;
  includeStack: boolean;
}

/**
 * LoopBack mounts its sequence at the API base path only, so requests outside
 * it (the operations console, stray paths) are served here, with the same request
 * log records and the same error body.
 */
export function mountOutsideApi(
  app: express.Application,
  options: OutsideApiOptions,
): void {
  app.use((request, response, next) => {
    // The same request id as the API gives (see request-id.middleware.ts).
    const {requestId} = requestIdFor(request.headers['x-request-id']);
    response.setHeader(REQUEST_ID_HEADER, requestId);
    withRequestId(requestId, () => {
      const log = startRequestLog(options.logger, request as Request);
      // Bound: 'finish' is emitted outside the request's async context.
      response.on(
        'finish',
        AsyncResource.bind(() => {
          const failure = failureOf(response as Response);
          if (failure) log.failed(failure.error, failure.statusCode);
          else log.completed(response as Response);
        }),
      );
      next();
    });
  });
  app.use(options.securityHeaders);
  app.use(consoleStatic(options.consoleDir));
  app.use((request, response) => {
    const error = new HttpErrors.NotFound(
      `Endpoint "${request.method} ${request.path}" not found.`,
    );
    writeErrorResponse(response as Response, error, options.includeStack);
  });
  app.use(
    (
      error: unknown,
      _request: express.Request,
      response: express.Response,
      _next: express.NextFunction,
    ) => writeErrorResponse(response as Response, error, options.includeStack),
  );
}
