import {expect} from '@loopback/testlab';
import {withoutRequestId} from '../fixtures/error-body';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
  withClient,
} from '../fixtures/test-database';

type ErrorBody = {
  error: {
    statusCode: number;
    name: string;
    message: string;
    details?: Array<{path: string; code: string; message: string}>;
  };
};

/** Issue 14, item 9: what reaches a worker, and how long a request may hold the database. */
describe('API boundaries: worker param keys and statement timeouts', () => {
  describe('worker params', () => {
    let given: TestApp;
    let api: AuthedClient;
    before(async () => {
      given = await givenRunningApp();
    });
    after(() => given.app.stop());
    beforeEach(async () => {
      await truncateAll();
      await givenCatalog();
      api = asUser(given.client, (await givenTeam(given.app)).operator);
    });
    const workerScheduler = (params: object) =>
      api.post('/api/schedulers').send(
        givenSchedulerBody({
          report_id: undefined,
          worker_id: 2,
          params,
        }),
      );

    for (const key of ['--flag', '-x', '1abc', 'a-b', 'a b', 'ключ', '']) {
      it(`refuses the worker param key ${JSON.stringify(key)} on create (422)`, async () => {
        const res = await workerScheduler({[key]: 'v'}).expect(422);
        const [detail] = (res.body as ErrorBody).error.details!;
        expect(detail).to.containDeep({
          path: '/params',
          code: 'workerParamKey',
        });
      });
    }

    it('refuses scheduler_id as a worker param key: the service passes it', async () => {
      const res = await workerScheduler({scheduler_id: 7}).expect(422);
      expect((res.body as ErrorBody).error.details![0].message).to.match(
        /reserved/,
      );
    });

    it('accepts plain names, and checks the merged record on PATCH', async () => {
      const created = (
        await workerScheduler({batch_size: 10, _dry: true, Mode2: 'x'}).expect(
          201,
        )
      ).body;
      await api
        .patch(`/api/schedulers/${created.id}`)
        .send({params: {'--rm': '-rf'}})
        .expect(422);
      await api
        .patch(`/api/schedulers/${created.id}`)
        .send({params: {rm: '-rf'}})
        .expect(200);
    });

    it('leaves report params alone (they are not command-line arguments)', async () => {
      await api
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            params: {
              controller: 'SalesReport',
              options_interface: {delivery: {email: true}},
              'x-note': 'fine',
            },
          }),
        )
        .expect(201);
    });
  });

  describe('statement timeout', () => {
    let given: TestApp;
    after(() => given?.app.stop());

    it('answers 503 with the uniform body when a query outlasts API_STATEMENT_TIMEOUT_MS, instead of hanging', async () => {
      given = await givenRunningApp({apiStatementTimeoutMs: 200});
      await truncateAll();
      await givenCatalog();
      const team = await givenTeam(given.app);
      const [scheduler] = await sql<{id: number}>(
        `INSERT INTO scheduler (description, schedule, report_id) VALUES ('s', '* * * * *', 1) RETURNING id`,
      );
      await sql(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id)
         VALUES ($1, 'k1', 'c')`,
        [scheduler.id],
      );
      const viewer = asUser(given.client, team.viewer);
      // The read waits on a lock another session holds: a query that takes
      // as long as the test wants on any machine (a large scan once finished
      // within the 200 ms on a fast one). statement_timeout counts the wait.
      const res = await withClient(TEST_DATABASE_URL, async holder => {
        await holder.query('BEGIN');
        await holder.query(
          'LOCK TABLE scheduler_execution IN ACCESS EXCLUSIVE MODE',
        );
        try {
          const started = Date.now();
          const answer = await viewer
            .get('/api/scheduler-executions')
            .expect(503);
          expect(Date.now() - started).to.be.within(150, 5000);
          return answer;
        } finally {
          await holder.query('ROLLBACK');
        }
      });
      expect(withoutRequestId(res)).to.deepEqual({
        error: {
          statusCode: 503,
          name: 'ServiceUnavailableError',
          message:
            'The database did not answer within the statement timeout; narrow the filter or try again later',
        },
      });
      // The pool is not poisoned: the next requests answer, the same read too.
      await viewer.get('/api/schedulers').expect(200);
      const {body: runs} = await viewer
        .get('/api/scheduler-executions')
        .expect(200);
      expect(runs).to.have.length(1);
    });
  });
});
