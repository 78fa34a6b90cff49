import {inject} from '@loopback/core';
import {get, oas, Response, RestBindings} from '@loopback/rest';
import {livenessResponse, readinessResponse} from '../health/readiness';
import type {ReadinessService} from '../health/readiness.service';
import {HealthBindings} from '../keys';

const CHECK_SCHEMA = {
  type: 'object',
  title: 'ReadinessCheck',
  required: ['status'],
  properties: {
    status: {type: 'string', enum: ['up', 'down']},
    reason: {type: 'string'},
  },
};

/**
 * Probes for load balancers and orchestrators. No credentials: they reveal
 * only whether the service and its dependencies answer.
 */
@oas.tags('Health')
export class HealthController {
  constructor(
    @inject(HealthBindings.READINESS)
    private readonly readiness: ReadinessService,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  @get('/health', {
    summary: 'Liveness: the process answers (no dependency is asked)',
    description:
      'Answers 200 whenever the process can answer at all; no token needed. For load balancers and orchestrators.',
    responses: {
      '200': {
        description: 'The service is alive',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'LivenessResponse',
              required: ['status', 'time'],
              properties: {
                status: {type: 'string', enum: ['ok']},
                time: {type: 'string', format: 'date-time'},
              },
            },
          },
        },
      },
    },
  })
  health(): object {
    return livenessResponse(new Date()).body;
  }

  @get('/ready', {
    summary: 'Readiness: PostgreSQL and RabbitMQ are reachable',
    description:
      "Checks each dependency of this process's roles within 3 s; 503 names the ones that are down (the reasons go to the service log). No token needed.",
    responses: {
      '200': {
        description: 'Every dependency answers',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'ReadinessResponse',
              required: ['status', 'checks'],
              properties: {
                status: {type: 'string', enum: ['ready']},
                checks: {type: 'object', additionalProperties: CHECK_SCHEMA},
              },
            },
          },
        },
      },
      '503': {
        description:
          'A dependency does not answer; error.details names each one (path /postgres, /rabbitmq, /producer, /stay-alive); the reason is in the service log',
      },
    },
  })
  async ready(): Promise<object> {
    const {statusCode, body} = readinessResponse(await this.readiness.check());
    this.response.status(statusCode);
    return body;
  }
}
