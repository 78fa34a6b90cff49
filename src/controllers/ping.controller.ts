import {get, oas} from '@loopback/rest';
import {serviceVersion} from '../about/service-info';

@oas.tags('Ping')
export class PingController {
  @get('/ping', {
    summary: 'Check that the API answers',
    description:
      'Answers `{"status":"ok","time":…,"version":…}` (the service\'s version) without a token and without asking any dependency; use /ready to check PostgreSQL and RabbitMQ.',
    responses: {
      '200': {
        description: 'The API answers',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'PingResponse',
              properties: {
                status: {type: 'string'},
                time: {type: 'string', format: 'date-time'},
                version: {
                  type: 'string',
                  description: 'The service version (package.json)',
                },
              },
            },
          },
        },
      },
    },
  })
  ping(): {status: string; time: string; version: string} {
    return {
      status: 'ok',
      time: new Date().toISOString(),
      version: serviceVersion(),
    };
  }
}
