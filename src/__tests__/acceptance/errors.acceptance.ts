import {get} from '@loopback/rest';
import {withoutRequestId} from '../fixtures/error-body';
import {expect} from '@loopback/testlab';
import {dropDatabase} from '../../database/database-admin';
import {migrateDatabase} from '../../database/migration-runner';
import {LogCapture} from '../fixtures/log-capture';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenUser} from '../fixtures/security';
import {
  givenCatalog,
  uniqueDatabaseUrl,
  withClient,
} from '../fixtures/test-database';

/** Business code that fails the way unexpected code does. */
class ExplodingController {
  @get('/test/explode')
  explode(): never {
    throw new Error(
      'connection to db.internal:5432 failed for password hunter2',
    );
  }
}

function expectUniformBody(body: unknown, statusCode: number, name: string) {
  expect(body).to.have.property('error');
  const {error} = body as {error: Record<string, unknown>};
  expect(error).to.containDeep({statusCode, name});
  expect(error.message).to.be.a.String();
}

describe('uniform HTTP errors', () => {
  describe('in production (NODE_ENV=production)', () => {
    let given: TestApp;
    let api: AuthedClient;
    before(async () => {
      given = await givenRunningApp({nodeEnv: 'production'}, app =>
        app.controller(ExplodingController),
      );
      api = asUser(given.client, await givenUser(given.app, 'operator'));
    });
    after(() => given.app.stop());

    it('answers malformed JSON with 400 BadRequestError', async () => {
      const res = await api
        .post('/api/schedulers')
        .set('Content-Type', 'application/json')
        .send('{"description": "x",')
        .expect(400);
      expectUniformBody(res.body, 400, 'BadRequestError');
    });

    it('answers a __proto__ key with 400 and pollutes nothing', async () => {
      const res = await api
        .post('/api/schedulers')
        .set('Content-Type', 'application/json')
        .send(
          '{"description":"x","schedule":"* * * * *","report_id":1,"__proto__":{"polluted":true}}',
        )
        .expect(400);
      expectUniformBody(res.body, 400, 'BadRequestError');
      expect(({} as Record<string, unknown>).polluted).to.be.undefined();
    });

    it('answers a body over 1 MB with 413', async () => {
      const res = await api
        .post('/api/schedulers')
        .send(givenSchedulerBody({description: 'x'.repeat(1024 * 1024 + 1)}))
        .expect(413);
      expectUniformBody(res.body, 413, 'PayloadTooLargeError');
    });

    it('answers an unknown API path with 404 NotFoundError', async () => {
      const res = await given.client.get('/api/no-such-thing').expect(404);
      expectUniformBody(res.body, 404, 'NotFoundError');
    });

    it('answers an unknown path outside the API with the same 404 body', async () => {
      // Extensionless GETs are console deep links (index.html); a missing
      // file or another method is a 404.
      for (const request of [
        given.client.get('/no-such-file.js'),
        given.client.post('/no-such-page'),
      ]) {
        const res = await request.expect(404);
        expectUniformBody(res.body, 404, 'NotFoundError');
        expect(res.headers['content-type']).to.match(/application\/json/);
      }
    });

    it('answers a thrown generic error with 500 that reveals nothing', async () => {
      const res = await given.client.get('/api/test/explode').expect(500);
      expect(withoutRequestId(res)).to.deepEqual({
        error: {
          statusCode: 500,
          name: 'InternalServerError',
          message: 'Internal Server Error',
        },
      });
    });

    it('never puts a stack into any response', async () => {
      const responses = await Promise.all([
        given.client.get('/api/test/explode'),
        api.get('/api/schedulers/999999'),
        api.post('/api/schedulers').send({}),
        given.client.get('/nowhere'),
      ]);
      for (const res of responses) {
        expect(JSON.stringify(res.body)).to.not.match(/stack|\.ts:|\.js:/);
      }
    });

    it('still writes the stack to the log', async () => {
      given.logs.clear();
      await given.client.get('/api/test/explode').expect(500);
      const [failed] = given.logs.find('Request failed');
      expect(failed.level).to.equal('error');
      expect(failed.stack).to.match(/ExplodingController/);
    });
  });

  describe('in development (NODE_ENV=development)', () => {
    let given: TestApp;
    let api: AuthedClient;
    before(async () => {
      given = await givenRunningApp({nodeEnv: 'development'}, app =>
        app.controller(ExplodingController),
      );
      api = asUser(given.client, await givenUser(given.app, 'operator'));
    });
    after(() => given.app.stop());

    it('adds the stack as error.stack', async () => {
      const res = await given.client.get('/api/test/explode').expect(500);
      expect(res.body.error).to.containDeep({
        statusCode: 500,
        name: 'InternalServerError',
        message: 'Internal Server Error',
      });
      expect(res.body.error.stack).to.match(/ExplodingController\.explode/);
    });

    it('adds the stack to client errors too', async () => {
      const res = await api.get('/api/schedulers/999999').expect(404);
      expect(res.body.error.stack).to.match(/NotFound|Entity not found/);
    });
  });

  describe('database failures and conflicts', function (this: Mocha.Suite) {
    // Its hooks migrate a database of its own, and stop the app and drop
    // it: as long as the root hooks' own, which do the same. One such
    // `after all` passed 20 s with four test processes on two cores.
    this.timeout(SLOW_SUITE_TIMEOUT_MS);
    const databaseUrl = uniqueDatabaseUrl('broken');
    let given: TestApp;
    let api: AuthedClient;
    before(async () => {
      await migrateDatabase(databaseUrl, new LogCapture('error').logger);
      await givenCatalog(databaseUrl);
      given = await givenRunningApp({databaseUrl, nodeEnv: 'production'});
      api = asUser(given.client, await givenUser(given.app, 'operator'));
    });
    after(async () => {
      await given.app.stop();
      await dropDatabase(databaseUrl);
    });

    it('answers a database failure with 500 and never the database text', async () => {
      await withClient(databaseUrl, c =>
        c.query('ALTER TABLE scheduler RENAME TO scheduler_gone'),
      );
      try {
        given.logs.clear();
        const res = await api.get('/api/schedulers').expect(500);
        expect(withoutRequestId(res)).to.deepEqual({
          error: {
            statusCode: 500,
            name: 'InternalServerError',
            message: 'Internal Server Error',
          },
        });
        expect(JSON.stringify(res.body)).to.not.match(
          /relation|scheduler_gone|does not exist/,
        );
        const [failed] = given.logs.find('Request failed');
        expect(failed).to.containDeep({error_code: '42P01', status: 'error'});
      } finally {
        await withClient(databaseUrl, c =>
          c.query('ALTER TABLE scheduler_gone RENAME TO scheduler'),
        );
      }
    });

    it('answers a unique-key conflict from the database with 422, logging PG code 23505', async () => {
      const {body} = await api
        .post('/api/schedulers')
        .send(givenSchedulerBody())
        .expect(201);
      await withClient(databaseUrl, c =>
        c.query(
          `CREATE UNIQUE INDEX scheduler_description_test_uniq ON scheduler (description)`,
        ),
      );
      try {
        given.logs.clear();
        const res = await api
          .post('/api/schedulers')
          .send(givenSchedulerBody({description: body.description}))
          .expect(422);
        expectUniformBody(res.body, 422, 'UnprocessableEntityError');
        expect(res.body.error.message).to.not.match(/duplicate key value/);
        const [failed] = given.logs.find('Request failed');
        expect(failed).to.containDeep({error_code: '23505', status_code: 422});
      } finally {
        await withClient(databaseUrl, c =>
          c.query('DROP INDEX scheduler_description_test_uniq'),
        );
      }
    });

    it('answers a foreign-key violation from the database with 422', async () => {
      given.logs.clear();
      const res = await api
        .post('/api/schedulers')
        .send(givenSchedulerBody({group_id: 999}))
        .expect(422);
      expectUniformBody(res.body, 422, 'UnprocessableEntityError');
      expect(res.body.error.details[0].info).to.deepEqual({
        constraint: 'scheduler_group_fk',
      });
      const [failed] = given.logs.find('Request failed');
      expect(failed).to.containDeep({error_code: '23503', status_code: 422});
    });
  });
});
