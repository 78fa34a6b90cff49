import {get, oas} from '@loopback/rest';

@oas.tags('Ping')
export class PingController {
  @get('/ping', {
    summary: 'Check that the API answers',
    description:
      'Answers `{"status":"ok","time":…}` without a token and without asking any dependency; use /ready to check PostgreSQL and RabbitMQ.',
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
              },
            },
          },
        },
      },
    },
  })
  ping(): {status: string; time: string} {
    return {status: 'ok', time: new Date().toISOString()};
  }
}
