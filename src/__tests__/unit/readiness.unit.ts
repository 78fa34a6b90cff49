import {expect} from '@loopback/testlab';
import {loadConfig} from '../../config';
import {readinessUrl} from '../../healthcheck';
import {
  describeFailure,
  loopFreshness,
  readinessResponse,
  runChecks,
} from '../../health/readiness';

const at = (iso: string) => new Date(iso);

describe('readiness', () => {
  describe('loopFreshness (the producer tick and the supervisor round)', () => {
    it('is down before the first run has finished', () => {
      expect(
        loopFreshness('producer tick', undefined, at('2026-11-21T10:00:00Z')),
      ).to.deepEqual({
        status: 'down',
        reason: 'no producer tick has finished yet',
      });
    });

    it('is up up to two minutes after the last finished run, and down after', () => {
      const last = at('2026-11-21T10:00:00Z');
      expect(
        loopFreshness('tick', last, at('2026-11-21T10:02:00Z')),
      ).to.deepEqual({status: 'up'});
      expect(
        loopFreshness('tick', last, at('2026-11-21T10:02:00.001Z')),
      ).to.deepEqual({
        status: 'down',
        reason: 'the last tick finished 120 s ago (limit 120 s)',
      });
    });
  });

  describe('readinessResponse', () => {
    it('answers 200 with every check when all are up', () => {
      expect(
        readinessResponse({postgres: {status: 'up'}, rabbitmq: {status: 'up'}}),
      ).to.deepEqual({
        statusCode: 200,
        body: {
          status: 'ready',
          checks: {postgres: {status: 'up'}, rabbitmq: {status: 'up'}},
        },
      });
    });

    it('answers 503 with the uniform error body naming each dependency that is down, never its error text', () => {
      expect(
        readinessResponse({
          postgres: {status: 'up'},
          rabbitmq: {status: 'down', reason: 'unreachable (ECONNREFUSED)'},
        }),
      ).to.deepEqual({
        statusCode: 503,
        body: {
          error: {
            statusCode: 503,
            name: 'ServiceUnavailableError',
            message: 'Not ready: rabbitmq is not available',
            details: [
              {
                path: '/rabbitmq',
                code: 'unavailable',
                message: 'not available',
              },
            ],
          },
        },
      });
    });
  });

  describe('runChecks', () => {
    it('counts a check that throws or hangs as down, and runs them side by side', async () => {
      const report = await runChecks(
        [
          {name: 'fine', run: async () => ({status: 'up'})},
          {
            name: 'broken',
            run: async () => {
              throw Object.assign(new Error('connect refused'), {
                code: 'ECONNREFUSED',
              });
            },
          },
          {name: 'stuck', run: () => new Promise(() => undefined)},
        ],
        50,
      );
      expect(report).to.deepEqual({
        fine: {status: 'up'},
        broken: {status: 'down', reason: 'unreachable (ECONNREFUSED)'},
        stuck: {status: 'down', reason: 'no answer within 50 ms'},
      });
    });
  });

  it('describes failures without credentials embedded in URLs', () => {
    expect(
      describeFailure(new Error('cannot reach amqp://guest:s3cret@mq:5672/')),
    ).to.equal('cannot reach amqp://mq:5672/');
    expect(describeFailure('odd')).to.equal('odd');
  });

  describe('the container healthcheck URL', () => {
    it('asks HEALTH_PORT when it is set, whatever the mode', () => {
      for (const mode of ['api', 'scheduler', 'worker', 'stay-alive', 'all']) {
        expect(
          readinessUrl(loadConfig({APP_MODE: mode, HEALTH_PORT: '8081'})),
        ).to.equal('http://127.0.0.1:8081/api/ready');
      }
    });

    it('asks the API port otherwise, under the base path', () => {
      expect(
        readinessUrl(loadConfig({PORT: '4000', API_BASE_PATH: '/v1'})),
      ).to.equal('http://127.0.0.1:4000/v1/ready');
    });
  });
});
