import {expect} from '@loopback/testlab';
import {withoutRequestId} from '../fixtures/error-body';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {asUser, AuthedClient, givenUser} from '../fixtures/security';
import {truncateAll} from '../fixtures/test-database';

/**
 * Requests the API fuzzer (`npm run test:fuzz`) answered with a 500 before
 * they were fixed, each kept here as a regular test.
 */
describe('requests the API fuzzer found', () => {
  let given: TestApp;
  let api: AuthedClient;
  before(async () => {
    await truncateAll();
    given = await givenRunningApp({nodeEnv: 'production'});
    api = asUser(given.client, await givenUser(given.app, 'admin'));
  });
  after(() => given.app.stop());

  function expectDateRefused(
    body: {error: {details: Array<{path: string}>}},
    path: string,
  ) {
    expect(body.error).to.containDeep({
      statusCode: 422,
      name: 'UnprocessableEntityError',
      details: [{path, code: 'date'}],
    });
  }

  it('refuses a date filter the connector cannot read as a date (was 500 "Invalid date")', async () => {
    const res = await api
      .get('/api/groups?filter[where][updated_at][gt]=72476998')
      .expect(422);
    expectDateRefused(res.body, '/filter/where/updated_at/gt');
  });

  it('refuses a JSON filter comparing a timestamp with a word', async () => {
    const filter = JSON.stringify({where: {created_at: 'yesterday'}});
    const res = await api
      .get(`/api/schedulers?filter=${encodeURIComponent(filter)}`)
      .expect(422);
    expectDateRefused(res.body, '/filter/where/created_at');
  });

  it('refuses a bare list as a where condition (was 500 in juggler near-search)', async () => {
    for (const where of [{params: [[[null]]]}, {description: ['a', 'b']}]) {
      const filter = JSON.stringify({where});
      const res = await api
        .get(`/api/schedulers?filter=${encodeURIComponent(filter)}`)
        .expect(422);
      const [field] = Object.keys(where);
      expect(res.body.error).to.containDeep({
        statusCode: 422,
        details: [{path: `/filter/where/${field}`, code: 'type'}],
      });
    }
    // The list form that means something still works.
    const inq = JSON.stringify({where: {description: {inq: ['a', 'b']}}});
    await api
      .get(`/api/schedulers?filter=${encodeURIComponent(inq)}`)
      .expect(200);
  });

  it('refuses operands and an order the connector has no SQL for (was 500, "syntax error")', async () => {
    const refused: Array<[object, string]> = [
      [{id: {eq: {}}}, '/filter/where/id/eq'],
      [{id: {}}, '/filter/where/id'],
      [{id: {inq: []}}, '/filter/where/id/inq'],
      [{id: {nin: [[1]]}}, '/filter/where/id/nin'],
      [{id: {between: [1]}}, '/filter/where/id/between'],
    ];
    for (const [where, path] of refused) {
      const filter = encodeURIComponent(JSON.stringify({where}));
      const res = await api.get(`/api/failed-tasks?filter=${filter}`);
      expect({
        where,
        status: res.status,
        paths: res.body.error?.details?.map((d: {path: string}) => d.path),
      }).to.deepEqual({where, status: 422, paths: [path]});
    }
    const emptyOrder = encodeURIComponent(JSON.stringify({order: []}));
    const res = await api
      .get(`/api/failed-tasks?filter=${emptyOrder}`)
      .expect(422);
    expect(res.body.error.details).to.containDeep([
      {path: '/filter/order', code: 'order'},
    ]);
    for (const where of [{id: {between: [1, 5]}}, {id: {inq: [1, 2]}}]) {
      const filter = encodeURIComponent(JSON.stringify({where}));
      await api.get(`/api/failed-tasks?filter=${filter}`).expect(200);
    }
  });

  it('answers a date PostgreSQL cannot store with 422 (was 500, SQLSTATE 22009)', async () => {
    const res = await api
      .get('/api/schedulers?filter[where][created_at]=-10000')
      .expect(422);
    expect(withoutRequestId(res)).to.deepEqual({
      error: {
        statusCode: 422,
        name: 'UnprocessableEntityError',
        message: 'A value is not valid for its field',
      },
    });
  });

  it('answers a NUL character PostgreSQL cannot store with 422, in text and in JSON', async () => {
    const text = await api
      .post('/api/groups')
      .set('Content-Type', 'application/json')
      .send('{"name": "a\\u0000b"}')
      .expect(422);
    expect(text.body.error).to.containDeep({
      statusCode: 422,
      message: 'A value is not valid for its field',
    });
    const json = await api
      .post('/api/config')
      .set('Content-Type', 'application/json')
      .send('{"key": "nul", "value": {"a": "a\\u0000b"}}')
      .expect(422);
    expect(json.body.error.statusCode).to.equal(422);
  });

  it('routes path segments named like Object.prototype members (was 500 / wrong 404)', async () => {
    const history = await api
      .get('/api/schedulers/toString/executions')
      .expect(400);
    expect(history.body.error.name).to.equal('BadRequestError');
    for (const key of ['toString', 'constructor', 'valueOf']) {
      const missing = await api.get(`/api/config/${key}`).expect(404);
      expect(missing.body.error.message).to.equal(
        `Entity not found: Config with id ${key}`,
      );
      await api.post('/api/config').send({key, value: 1}).expect(201);
      const found = await api.get(`/api/config/${key}`).expect(200);
      expect(found.body).to.containDeep({key, value: 1});
    }
    await api.get('/api/schedulers/__proto__/executions').expect(400);
  });

  it('still filters by a real date', async () => {
    const filter = JSON.stringify({
      where: {created_at: {gt: '2000-01-01T00:00:00Z'}},
    });
    await api
      .get(`/api/schedulers?filter=${encodeURIComponent(filter)}`)
      .expect(200);
  });
});
