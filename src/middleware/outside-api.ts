import {HttpErrors, Request, Response} from '@loopback/rest';
import express from 'express';
import type {Logger} from '../logging/logger';
import {startRequestLog} from '../logging/request-log';
import {failureOf, writeErrorResponse} from './error-response';

export interface OutsideApiOptions {
  /** The same security headers as the API's responses. */
  securityHeaders: express.RequestHandler;
  publicDir: string;
  logger: Logger;
  includeStack: boolean;
}

/**
 * LoopBack mounts its sequence at the API base path only, so requests outside
 * it (the landing page, stray paths) are served here, with the same request
 * log records and the same error body.
 */
export function mountOutsideApi(
  app: express.Application,
  options: OutsideApiOptions,
): void {
  app.use((request, response, next) => {
    const log = startRequestLog(options.logger, request as Request);
    response.on('finish', () => {
      const failure = failureOf(response as Response);
      if (failure) log.failed(failure.error, failure.statusCode);
      else log.completed(response as Response);
    });
    next();
  });
  app.use(options.securityHeaders);
  app.use(express.static(options.publicDir, {index: 'index.html'}));
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
