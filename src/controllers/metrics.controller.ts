import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, oas, Response, RestBindings} from '@loopback/rest';
import {ADMINS} from '../auth/roles';
import {MetricsBindings} from '../keys';
import type {Metrics} from '../metrics/metrics';

/**
 * GET /metrics on the API port: admins only, so metrics are never public by
 * default. Prometheus scrapes HEALTH_PORT's open /metrics instead, which
 * belongs on a private network.
 */
@oas.tags('System')
@authenticate(...BEARER_STRATEGIES)
@authorize({allowedRoles: ADMINS})
export class MetricsController {
  constructor(
    @inject(MetricsBindings.METRICS) private readonly metrics: Metrics,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  @get('/metrics', {
    summary: 'Prometheus metrics of this API process',
    description:
      'The Prometheus text exposition (format 0.0.4) of this process: its own metrics and the default process metrics. Role: admin. Every role also serves it without a token at `GET /metrics` on HEALTH_PORT, for Prometheus on a private network.',
    responses: {
      '200': {
        description: 'The metrics',
        content: {'text/plain': {schema: {type: 'string'}}},
      },
    },
  })
  async scrape(): Promise<Response> {
    const {contentType, body} = await this.metrics.text();
    this.response.status(200).contentType(contentType).send(body);
    return this.response;
  }
}
