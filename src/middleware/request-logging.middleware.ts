import {BindingScope, inject, injectable, Provider} from '@loopback/core';
import {asMiddleware, Middleware, RestMiddlewareGroups} from '@loopback/rest';
import {componentLogger, Logger} from '../logging/logger';
import {startRequestLog} from '../logging/request-log';
import {LoggingBindings} from '../keys';
import {failureOf} from './error-response';

export const REQUEST_LOG_GROUP = 'requestLog';

/**
 * Outermost middleware: it wraps `sendResponse`, so it sees every request,
 * including unknown routes, after the response (or error body) is written.
 */
@injectable(
  asMiddleware({
    group: REQUEST_LOG_GROUP,
    downstreamGroups: [RestMiddlewareGroups.SEND_RESPONSE],
  }),
  // Nothing per request: made once, not on every request.
  {scope: BindingScope.SINGLETON},
)
export class RequestLoggingMiddlewareProvider implements Provider<Middleware> {
  private readonly logger: Logger;

  constructor(@inject(LoggingBindings.LOGGER) logger: Logger) {
    this.logger = componentLogger(logger, 'http');
  }

  value(): Middleware {
    return async (ctx, next) => {
      const log = startRequestLog(this.logger, ctx.request);
      try {
        const result = await next();
        const failure = failureOf(ctx.response);
        if (failure) log.failed(failure.error, failure.statusCode);
        else log.completed(ctx.response);
        return result;
      } catch (error) {
        // sendResponse normally catches everything; log what escapes it too.
        log.failed(error, 500);
        throw error;
      }
    };
  }
}
