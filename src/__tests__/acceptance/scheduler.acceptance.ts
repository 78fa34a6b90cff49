import {expect} from '@loopback/testlab';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {
  givenCatalog,
  truncateAll,
  withClient,
  TEST_DATABASE_URL,
} from '../fixtures/test-database';

const UNPROCESSABLE = {statusCode: 422, name: 'UnprocessableEntityError'};

describe('Scheduler API', () => {
  let given: TestApp;
  let team: Team;
  let api: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
    api = asUser(given.client, team.operator);
  });

  async function createScheduler(overrides: Record<string, unknown> = {}) {
    const res = await api
      .post('/api/schedulers')
      .send(givenSchedulerBody(overrides))
      .expect(201);
    return res.body;
  }

  function badFields(body: {
    error: {details: Array<{path: string}>};
  }): string[] {
    return body.error.details.map(detail => detail.path);
  }

  describe('POST /api/schedulers', () => {
    it('creates a recurring scheduler and answers 201 with the stored record', async () => {
      const created = await createScheduler();
      expect(created).to.containDeep({
        description: 'Daily sales report',
        schedule: '0 6 * * *',
        date_time: null,
        report_id: 1,
        worker_id: null,
        reminder_id: null,
        status: true,
        stay_alive: false,
        params: {controller: 'SalesReport'},
      });
      expect(created.id).to.be.a.Number();
      expect(created).to.not.have.property('user_id_created');
      expect(Date.parse(created.created_at)).to.not.be.NaN();

      const {body: stored} = await api
        .get(`/api/schedulers/${created.id}`)
        .expect(200);
      expect(stored).to.deepEqual(created);
    });

    it('makes the caller the owner (user_id) by default', async () => {
      const created = await createScheduler();
      expect(created.user_id).to.equal(team.operator.id);
    });

    it('lets an admin create for another user through user_id_created', async () => {
      const res = await asUser(given.client, team.admin)
        .post('/api/schedulers')
        .send(givenSchedulerBody({user_id_created: team.viewer.id}))
        .expect(201);
      const row = await withClient(TEST_DATABASE_URL, c =>
        c.query('SELECT user_id FROM scheduler WHERE id = $1', [res.body.id]),
      );
      expect(row.rows[0].user_id).to.equal(team.viewer.id);
    });

    it('refuses user_id_created naming someone else for a non-admin (403)', async () => {
      const res = await api
        .post('/api/schedulers')
        .send(givenSchedulerBody({user_id_created: team.viewer.id}))
        .expect(403);
      expect(res.body.error.name).to.equal('ForbiddenError');
    });

    it('creates a one-time worker scheduler and a stay-alive worker', async () => {
      const oneTime = await createScheduler({
        schedule: undefined,
        report_id: undefined,
        worker_id: 3,
        date_time: '2099-03-01T09:30:00+01:00',
        params: {batch: 500},
      });
      expect(oneTime.date_time).to.equal('2099-03-01T08:30:00.000Z');
      // Only admins may mark a scheduler stay-alive.
      const {body: stayAlive} = await asUser(given.client, team.admin)
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: undefined,
            report_id: undefined,
            worker_id: 4,
            stay_alive: true,
            status: true,
          }),
        )
        .expect(201);
      expect(stayAlive).to.containDeep({
        stay_alive: true,
        schedule: null,
        date_time: null,
      });
    });

    it('stores an IANA time zone for the schedule', async () => {
      const created = await createScheduler({timezone: 'Europe/Berlin'});
      expect(created.timezone).to.equal('Europe/Berlin');
    });

    it('defaults status to true and params to {}', async () => {
      const created = await createScheduler({
        status: undefined,
        params: undefined,
      });
      expect(created).to.containDeep({status: true, params: {}});
    });

    it('accepts status false at creation', async () => {
      expect((await createScheduler({status: false})).status).to.be.false();
    });

    const invalidBodies: Array<[string, Record<string, unknown>, string[]]> = [
      ['a four-field cron', {schedule: '0 6 * *'}, ['/schedule']],
      ['an empty cron', {schedule: ''}, ['/schedule']],
      ['an out-of-range cron', {schedule: '61 6 * * *'}, ['/schedule']],
      [
        'no task kind',
        {report_id: undefined},
        ['/report_id', '/worker_id', '/reminder_id'],
      ],
      ['two task kinds', {worker_id: 2}, ['/report_id', '/worker_id']],
      [
        'schedule and date_time',
        {date_time: '2099-01-01T00:00:00Z'},
        ['/schedule', '/date_time'],
      ],
      [
        'neither schedule nor date_time',
        {schedule: undefined},
        ['/schedule', '/date_time'],
      ],
      [
        'a date_time that is not ISO 8601',
        {schedule: undefined, date_time: 'tomorrow'},
        ['/date_time'],
      ],
      [
        'a date_time without a zone',
        {schedule: undefined, date_time: '2099-01-01T10:00:00'},
        ['/date_time'],
      ],
      ['params that are not an object', {params: ['a', 'b']}, ['/params']],
      ['params that are a string', {params: 'x=1'}, ['/params']],
      ['an unknown field', {colour: 'red'}, ['/colour']],
      ['an unknown time zone', {timezone: 'Mars/Olympus'}, ['/timezone']],
      ['a path as time zone', {timezone: '../../etc/passwd'}, ['/timezone']],
      ['a cron that never fires', {schedule: '0 0 30 2 *'}, ['/schedule']],
      ['user_id instead of user_id_created', {user_id: 3}, ['/user_id']],
      ['a missing description', {description: undefined}, ['/description']],
      ['a wrongly typed description', {description: 12}, ['/description']],
      ['a string id reference', {report_id: '1'}, ['/report_id']],
      ['a fractional id reference', {report_id: 1.5}, ['/report_id']],
      ['a negative id reference', {report_id: -1}, ['/report_id']],
      ['a string status', {status: 'yes'}, ['/status']],
      [
        'a stay-alive scheduler with a report',
        {stay_alive: true, schedule: undefined},
        ['/worker_id'],
      ],
    ];
    for (const [label, overrides, fields] of invalidBodies) {
      it(`rejects ${label} with 422 naming ${fields.join(', ')}`, async () => {
        const res = await api
          .post('/api/schedulers')
          .send(givenSchedulerBody(overrides))
          .expect(422);
        expect(res.body.error).to.containDeep(UNPROCESSABLE);
        expect(badFields(res.body)).to.containDeep(fields);
        const count = await withClient(TEST_DATABASE_URL, c =>
          c.query('SELECT count(*)::int AS n FROM scheduler'),
        );
        expect(count.rows[0].n).to.equal(0);
      });
    }

    it("checks a report scheduler's params as the report would, before any run", async () => {
      const report = (params: object) =>
        givenSchedulerBody({
          params: {controller: 'ExecutionsReport', ...params},
        });
      await api
        .post('/api/schedulers')
        .send(
          report({
            report_params: {from: '{{yesterday}}', status: ['failed']},
            options_interface: {output: {file: {format: 'Excel'}}},
          }),
        )
        .expect(201);
      const cases: Array<[object, string]> = [
        [{report_params: {colour: 'red'}}, '/params/report_params/colour'],
        [{report_params: {status: ['lost']}}, '/params/report_params/status'],
        [
          {options_interface: {output: {file: {format: 'DOCX'}}}},
          '/params/options_interface/output/file/format',
        ],
        [{report_params: 'all'}, '/params/report_params'],
      ];
      for (const [params, path] of cases) {
        const res = await api
          .post('/api/schedulers')
          .send(report(params))
          .expect(422);
        expect(res.body.error).to.containDeep(UNPROCESSABLE);
        expect({params, paths: badFields(res.body)}).to.deepEqual({
          params,
          paths: [path],
        });
      }
      const [{id}] = (
        await withClient(TEST_DATABASE_URL, client =>
          client.query(
            `INSERT INTO report (name, controller) VALUES ('old', 'SalesReport') RETURNING id`,
          ),
        )
      ).rows;
      const res = await api
        .post('/api/schedulers')
        .send(givenSchedulerBody({report_id: id}))
        .expect(422);
      expect(badFields(res.body)).to.deepEqual(['/report_id']);
      expect(res.body.error.details[0].message).to.match(
        /names controller "SalesReport", which is not a registered report/,
      );
    });

    it('rejects a body that is not an object', async () => {
      const res = await api
        .post('/api/schedulers')
        .set('Content-Type', 'application/json')
        .send('[1,2]')
        .expect(422);
      expect(res.body.error.name).to.equal('UnprocessableEntityError');
    });

    it('keeps an SQL-looking description as plain data', async () => {
      const description = "x'); DROP TABLE scheduler; --";
      const created = await createScheduler({description});
      expect(created.description).to.equal(description);
      await api.get('/api/schedulers').expect(200);
    });
  });

  describe('GET /api/schedulers', () => {
    it('lists schedulers and applies a LoopBack filter', async () => {
      await createScheduler({description: 'alpha'});
      await createScheduler({description: 'beta', status: false});
      const {body} = await api
        .get('/api/schedulers')
        .query({filter: JSON.stringify({where: {status: false}})})
        .expect(200);
      expect(
        body.map((s: {description: string}) => s.description),
      ).to.deepEqual(['beta']);
    });

    it('returns 100 by default and at most 1000', async () => {
      await withClient(TEST_DATABASE_URL, c =>
        c.query(
          `INSERT INTO scheduler (description, schedule, report_id)
           SELECT 'bulk ' || n, '* * * * *', 1 FROM generate_series(1, 1005) AS n`,
        ),
      );
      const byDefault = await api.get('/api/schedulers').expect(200);
      expect(byDefault.body).to.have.length(100);
      const capped = await api
        .get('/api/schedulers')
        .query({filter: JSON.stringify({limit: 5000})})
        .expect(200);
      expect(capped.body).to.have.length(1000);
      const paged = await api
        .get('/api/schedulers')
        .query({
          filter: JSON.stringify({limit: 10, skip: 1000, order: 'id ASC'}),
        })
        .expect(200);
      expect(paged.body).to.have.length(5);
    });

    it('keeps an SQL-looking filter value a parameter', async () => {
      await createScheduler({description: 'kept'});
      const {body} = await api
        .get('/api/schedulers')
        .query({
          filter: JSON.stringify({
            where: {description: "x' OR '1'='1'; DROP TABLE scheduler; --"},
          }),
        })
        .expect(200);
      expect(body).to.deepEqual([]);
      const all = await api.get('/api/schedulers').expect(200);
      expect(all.body).to.have.length(1);
    });

    it('rejects a where clause on an unknown field instead of returning everything', async () => {
      await createScheduler();
      const res = await api
        .get('/api/schedulers')
        .query({filter: JSON.stringify({where: {descripton: 'typo'}})})
        .expect(422);
      expect(badFields(res.body)).to.deepEqual(['/filter/where/descripton']);
    });

    it('rejects an order clause that is not a field and a direction', async () => {
      const res = await api
        .get('/api/schedulers')
        .query({filter: JSON.stringify({order: 'id; DROP TABLE scheduler'})})
        .expect(422);
      expect(res.body.error.details[0].code).to.equal('order');
    });

    it('answers 400 for a filter that is not JSON', async () => {
      const res = await api
        .get('/api/schedulers')
        .query({filter: '{"where":'})
        .expect(400);
      expect(res.body.error.name).to.equal('BadRequestError');
    });
  });

  describe('GET /api/schedulers/{id}', () => {
    it('answers 404 NotFoundError for an unknown id', async () => {
      const res = await api.get('/api/schedulers/999999').expect(404);
      expect(res.body.error).to.containDeep({
        statusCode: 404,
        name: 'NotFoundError',
      });
    });

    for (const id of ['abc', '1.5', '-1', '0', '99999999999', '1;DROP']) {
      it(`answers 400 BadRequestError for the id ${JSON.stringify(id)}`, async () => {
        const res = await api
          .get(`/api/schedulers/${encodeURIComponent(id)}`)
          .expect(400);
        expect(res.body.error).to.containDeep({
          statusCode: 400,
          name: 'BadRequestError',
        });
      });
    }
  });

  describe('PATCH /api/schedulers/{id}', () => {
    it('updates a subset of fields and answers 200 with the whole record', async () => {
      const created = await createScheduler();
      const res = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({status: false, schedule: '*/5 * * * *', params: {x: 1}})
        .expect(200);
      expect(res.body).to.containDeep({
        id: created.id,
        status: false,
        schedule: '*/5 * * * *',
        params: {x: 1},
        description: created.description,
      });
      expect(Date.parse(res.body.updated_at)).to.be.greaterThanOrEqual(
        Date.parse(created.updated_at),
      );
    });

    it('switches a recurring scheduler to one-time when schedule is cleared', async () => {
      const created = await createScheduler();
      const res = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({schedule: null, date_time: '2099-05-01T12:00:00Z'})
        .expect(200);
      expect(res.body).to.containDeep({
        schedule: null,
        date_time: '2099-05-01T12:00:00.000Z',
      });
    });

    it('validates the merged record, not just the patch', async () => {
      const created = await createScheduler();
      const res = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({date_time: '2099-05-01T12:00:00Z'})
        .expect(422);
      expect(badFields(res.body)).to.deepEqual(['/schedule', '/date_time']);
      const second = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({worker_id: 5})
        .expect(422);
      expect(badFields(second.body)).to.deepEqual(['/report_id', '/worker_id']);
    });

    it('rejects an invalid cron and leaves the record unchanged', async () => {
      const created = await createScheduler();
      const res = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({schedule: '* * * *'})
        .expect(422);
      expect(badFields(res.body)).to.deepEqual(['/schedule']);
      const {body} = await api.get(`/api/schedulers/${created.id}`).expect(200);
      expect(body.schedule).to.equal('0 6 * * *');
    });

    it('rejects unknown and server-owned fields', async () => {
      const created = await createScheduler();
      for (const field of [
        'id',
        'created_at',
        'user_id',
        'user_id_created',
        'colour',
      ]) {
        const res = await api
          .patch(`/api/schedulers/${created.id}`)
          .send({[field]: 1})
          .expect(422);
        expect(badFields(res.body)).to.deepEqual([`/${field}`]);
      }
    });

    it('answers 404 for an unknown id', async () => {
      await api
        .patch('/api/schedulers/999999')
        .send({status: false})
        .expect(404);
    });
  });

  describe('DELETE /api/schedulers/{id}', () => {
    it('deletes permanently with 204, along with its executions', async () => {
      const created = await createScheduler();
      await withClient(TEST_DATABASE_URL, c =>
        c.query(
          `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id)
           VALUES ($1, 'cron-2026-11-21-06-00', 'h-1')`,
          [created.id],
        ),
      );
      await api.delete(`/api/schedulers/${created.id}`).expect(204);
      await api.get(`/api/schedulers/${created.id}`).expect(404);
      const left = await withClient(TEST_DATABASE_URL, c =>
        c.query('SELECT count(*)::int AS n FROM scheduler_execution'),
      );
      expect(left.rows[0].n).to.equal(0);
    });

    it('answers 404 for an unknown id', async () => {
      const res = await api.delete('/api/schedulers/999999').expect(404);
      expect(res.body.error.name).to.equal('NotFoundError');
    });
  });
});
