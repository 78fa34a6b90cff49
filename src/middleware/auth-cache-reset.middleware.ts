import {BindingScope, inject, injectable, Provider} from '@loopback/core';
import {asMiddleware, Middleware, RestMiddlewareGroups} from '@loopback/rest';
import type {AuthUserCache} from '../auth/user-cache';
import {AuthBindings} from '../keys';

/** Methods that change nothing; any other request may change who may do what. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Empties the auth user cache when a request that may have written
 * completes, before the next request can be read: a change this process
 * made (a role, a deactivation, a sign-out) holds for the caller's very next
 * request. Other processes hear of it through the AuthChangeFeed.
 */
@injectable(
  asMiddleware({
    group: 'authCacheReset',
    downstreamGroups: [RestMiddlewareGroups.SEND_RESPONSE],
  }),
  // Nothing per request: made once, not on every request.
  {scope: BindingScope.SINGLETON},
)
export class AuthCacheResetMiddlewareProvider implements Provider<Middleware> {
  constructor(
    @inject(AuthBindings.USER_CACHE) private readonly cache: AuthUserCache,
  ) {}

  value(): Middleware {
    return async (ctx, next) => {
      if (SAFE_METHODS.has(ctx.request.method)) return next();
      try {
        return await next();
      } finally {
        this.cache.clear();
      }
    };
  }
}
