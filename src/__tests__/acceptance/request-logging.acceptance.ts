import {expect} from '@loopback/testlab';
import {asUser, AuthedClient, givenUser, TestUser} from '../fixtures/security';
import {givenCatalog, truncateAll} from '../fixtures/test-database';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';

const REQUEST_FIELDS = ['method', 'path', 'url', 'ip', 'user_agent'];

describe('request logging', () => {
  let given: TestApp;
  let operator: TestUser;
  let viewer: TestUser;
  let api: AuthedClient;
  before(async () => {
    given = await givenRunningApp();
    await truncateAll();
    await givenCatalog();
    operator = await givenUser(given.app, 'operator');
    viewer = await givenUser(given.app, 'viewer');
    api = asUser(given.client, operator);
  });
  after(() => given.app.stop());
  beforeEach(() => given.logs.clear());

  it('logs Incoming request, then Request completed with status and duration', async () => {
    await api
      .post('/api/schedulers')
      .set('User-Agent', 'ops-cli/1.0')
      .send(givenSchedulerBody())
      .expect(201);
    const [incoming] = given.logs.find('Incoming request', {
      path: '/api/schedulers',
    });
    const [completed] = given.logs.find('Request completed', {
      path: '/api/schedulers',
    });
    for (const record of [incoming, completed]) {
      expect(record).to.containDeep({
        level: 'info',
        context: 'http',
        method: 'POST',
        path: '/api/schedulers',
        url: '/api/schedulers',
        user_agent: 'ops-cli/1.0',
      });
      expect(Object.keys(record)).to.containDeep(REQUEST_FIELDS);
      expect(record.ip).to.match(/127\.0\.0\.1/);
    }
    expect(completed).to.containDeep({status_code: 201, status: 'success'});
    expect(completed.duration_ms).to.be.a.Number();
    expect(completed.duration_ms as number).to.be.greaterThanOrEqual(0);
  });

  it('logs a refused request exactly once, at info, with the error fields and no stack', async () => {
    await api
      .post('/api/schedulers')
      .send({description: 'no task'})
      .expect(422);
    const failed = given.logs.find('Request failed');
    expect(failed).to.have.length(1);
    expect(failed[0]).to.containDeep({
      level: 'info',
      method: 'POST',
      path: '/api/schedulers',
      error_name: 'UnprocessableEntityError',
      error_code: 422,
      status: 'error',
    });
    expect(failed[0].error).to.match(/invalid/);
    expect(failed[0]).to.not.have.property('stack');
    expect(failed[0].duration_ms).to.be.a.Number();
    expect(given.logs.find('Request completed')).to.have.length(0);
  });

  it('logs client errors below error level and never with a stack: 401/403 warn, other 4xx info', async () => {
    await given.client.get('/api/no/such/path').expect(404);
    // A path with a file extension: extensionless ones are console deep links.
    await given.client.get('/no-such-file.js').expect(404);
    await given.client
      .post('/api/auth/login')
      .send({email: operator.email, password: 'wrong-password-1'})
      .expect(401);
    await given.client.get('/api/schedulers').expect(401);
    await asUser(given.client, viewer).get('/api/users').expect(403);
    const levels = given.logs
      .find('Request failed')
      .map(r => [r.status_code, r.level, 'stack' in r]);
    expect(levels).to.deepEqual([
      [404, 'info', false],
      [404, 'info', false],
      [401, 'warn', false],
      [401, 'warn', false],
      [403, 'warn', false],
    ]);
    expect(given.logs.records.filter(r => r.level === 'error')).to.have.length(
      0,
    );
  });

  it('logs unknown routes inside and outside the API base path', async () => {
    await given.client.get('/api/unknown/route?x=1').expect(404);
    await given.client.get('/unknown-file.txt').expect(404);
    const failed = given.logs.find('Request failed');
    expect(failed.map(r => [r.path, r.url, r.error_code])).to.deepEqual([
      ['/api/unknown/route', '/api/unknown/route?x=1', 404],
      ['/unknown-file.txt', '/unknown-file.txt', 404],
    ]);
    expect(given.logs.find('Incoming request')).to.have.length(2);
  });

  it('cuts a very long URL in the log and says by how much', async () => {
    const long = 'x'.repeat(5000);
    await api.get(`/api/schedulers/${long}`).expect(400);
    const records = given.logs.records.filter(
      record => record.msg === 'Request failed',
    );
    expect(records).to.have.length(1);
    const {path, url} = records[0] as unknown as {path: string; url: string};
    expect(path).to.equal(
      `/api/schedulers/${'x'.repeat(2048 - 16)}...[${16 + 5000 - 2048} more characters]`,
    );
    expect(url).to.equal(path);
  });

  it('logs the operations console served at / and at its deep links', async () => {
    const res = await given.client.get('/').expect(200);
    expect(res.text).to.match(/<title>Task Scheduler console<\/title>/);
    await given.client.get('/schedulers/12').expect(200);
    expect(
      given.logs.find('Request completed', {
        path: '/schedulers/12',
        status_code: 200,
      }),
    ).to.have.length(1);
    expect(
      given.logs.find('Request completed', {path: '/', status_code: 200}),
    ).to.have.length(1);
  });

  it('never writes Authorization headers, tokens or passwords to the log', async () => {
    await given.client
      .post('/api/schedulers?access_token=query-secret-1')
      .set('Authorization', 'Bearer header-secret-2')
      .send({...givenSchedulerBody(), password: 'body-secret-3'})
      .expect(401);
    await api
      .post('/api/schedulers')
      .send({...givenSchedulerBody(), password: 'body-secret-4'})
      .expect(422);
    await given.client
      .post('/api/auth/login')
      .send({email: operator.email, password: 'body-secret-5'})
      .expect(401);
    const all = given.logs.lines.join('\n');
    expect(all).to.not.match(
      /query-secret-1|header-secret-2|body-secret-[345]/,
    );
    expect(all).to.not.containEql(operator.token);
    expect(given.logs.find('Request failed')[0].url).to.equal(
      '/api/schedulers?access_token=%5BREDACTED%5D',
    );
  });
});
