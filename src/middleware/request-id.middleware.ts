import {BindingScope, inject, injectable, Provider} from '@loopback/core';
import {asMiddleware, Middleware} from '@loopback/rest';
import {LoggingBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {requestIdFor, withRequestId} from '../logging/request-context';
import {REQUEST_LOG_GROUP} from './request-logging.middleware';

export const REQUEST_ID_HEADER = 'X-Request-Id';
export const REQUEST_ID_GROUP = 'requestId';

/**
 * Outermost of all: gives the request its id (the caller's X-Request-Id when
 * sane, else a new UUID), echoes it in the response header, and runs the
 * rest of the chain inside it, so every log record of the request, the
 * error body and the audit events carry it.
 */
@injectable(
  asMiddleware({
    group: REQUEST_ID_GROUP,
    downstreamGroups: [REQUEST_LOG_GROUP],
  }),
  // Nothing per request: made once, not on every request.
  {scope: BindingScope.SINGLETON},
)
export class RequestIdMiddlewareProvider implements Provider<Middleware> {
  private readonly logger: Logger;

  constructor(@inject(LoggingBindings.LOGGER) logger: Logger) {
    this.logger = componentLogger(logger, 'http');
  }

  value(): Middleware {
    return (ctx, next) => {
      const given = ctx.request.headers['x-request-id'];
      const {requestId, refused} = requestIdFor(given);
      ctx.response.setHeader(REQUEST_ID_HEADER, requestId);
      return withRequestId(requestId, () => {
        if (refused) {
          // Never the value itself: it may be huge or hold control characters.
          this.logger.debug('X-Request-Id refused: replaced by a new id', {
            given_length: String(given).length,
          });
        }
        return next();
      });
    };
  }
}
