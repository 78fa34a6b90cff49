import {
  BindingScope,
  injectable,
  Provider,
  ValueOrPromise,
} from '@loopback/core';
import {asMiddleware, Middleware} from '@loopback/express';
import {
  ParseParamsMiddlewareProvider,
  RestBindings,
  RestMiddlewareGroups,
  RestTags,
} from '@loopback/rest';
import {refuseNonCanonicalIntegers} from './canonical-integers';

/** The key LoopBack's RestComponent binds its parse-params middleware under. */
export const PARSE_PARAMS_MIDDLEWARE_KEY = `providers.${ParseParamsMiddlewareProvider.name}`;

/**
 * LoopBack's parse-params middleware with one step first: integer path and
 * query parameters must be plain decimal integers (canonical-integers.ts).
 * Bound under the key of LoopBack's own, so it takes its place in the chain
 * (after authentication, as before) at no extra middleware's cost.
 */
@injectable(
  asMiddleware({
    group: RestMiddlewareGroups.PARSE_PARAMS,
    upstreamGroups: RestMiddlewareGroups.FIND_ROUTE,
    chain: RestTags.REST_MIDDLEWARE_CHAIN,
  }),
  {scope: BindingScope.SINGLETON},
)
export class CanonicalParseParamsMiddlewareProvider implements Provider<Middleware> {
  value(): ValueOrPromise<Middleware> {
    const parse = new ParseParamsMiddlewareProvider().value();
    return (ctx, next) => {
      // Bound by the find-route middleware before this group runs.
      const route = ctx.getSync(RestBindings.Operation.ROUTE);
      refuseNonCanonicalIntegers(ctx.request, route);
      return parse(ctx, next);
    };
  }
}
