import {BindingScope, inject, injectable, Provider} from '@loopback/core';
import {
  asMiddleware,
  BaseRoute,
  Middleware,
  RestBindings,
  RestMiddlewareGroups,
} from '@loopback/rest';
import type {AppConfig} from '../config';
import {AppBindings, MetricsBindings} from '../keys';
import type {Metrics} from '../metrics/metrics';
import {REQUEST_LOG_GROUP} from './request-logging.middleware';

/** Requests that matched no API route (static files, 404s): one label value. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The `method` label's values: the methods the API answers, and `other` for
 * the rest (Node's parser takes some 30 more, PROPFIND to M-SEARCH), so a
 * scanner's methods cannot add series.
 */
export const HTTP_METHOD_LABELS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'other',
] as const;

const METHOD_LABELS: ReadonlySet<string> = new Set(HTTP_METHOD_LABELS);

/** The request's method as a label value: one of HTTP_METHOD_LABELS. */
export function methodLabel(method: string | undefined): string {
  return method !== undefined && METHOD_LABELS.has(method) ? method : 'other';
}

/**
 * API latency and requests in flight. The `route` label is the matched
 * route's template (`/api/schedulers/{id}`), never the raw path, so ids and
 * scanners' paths cannot blow up the number of series.
 */
@injectable(
  asMiddleware({
    group: 'httpMetrics',
    upstreamGroups: [REQUEST_LOG_GROUP],
    downstreamGroups: [RestMiddlewareGroups.SEND_RESPONSE],
  }),
  // Nothing per request: made once, not on every request.
  {scope: BindingScope.SINGLETON},
)
export class HttpMetricsMiddlewareProvider implements Provider<Middleware> {
  constructor(
    @inject(MetricsBindings.METRICS) private readonly metrics: Metrics,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
  ) {}

  value(): Middleware {
    const inFlight = this.metrics.get('httpInFlight');
    const duration = this.metrics.get('httpDuration');
    const base = this.config.apiBasePath;
    return async (ctx, next) => {
      const started = process.hrtime.bigint();
      inFlight.inc();
      try {
        return await next();
      } finally {
        inFlight.dec();
        const route = ctx.getSync(RestBindings.Operation.ROUTE, {
          optional: true,
        });
        duration.observe(
          {
            method: methodLabel(ctx.request.method),
            // Only a route of the API has a template; what else answers
            // (static files, the not-found route) shares one value.
            route:
              route instanceof BaseRoute
                ? `${base}${route.path}`
                : UNMATCHED_ROUTE,
            code: String(ctx.response.statusCode),
          },
          Number(process.hrtime.bigint() - started) / 1e9,
        );
      }
    };
  }
}
