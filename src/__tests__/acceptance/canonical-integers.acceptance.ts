import {expect} from '@loopback/testlab';
import {asUser, AuthedClient, givenUser} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {CanonicalParseParamsMiddlewareProvider} from '../../routing/parse-params.middleware';

/**
 * An integer path or query parameter is read only when written as one:
 * `0x1`, `1e0`, `+1`, `01` or `1.0` used to name scheduler 1, and a fraction
 * near 2^53 was rounded to the next run's id. Now each is the uniform 400.
 */
describe('integer parameters written as integers only', () => {
  let given: TestApp;
  let viewer: AuthedClient;
  let admin: AuthedClient;
  let schedulerId: number;
  before(async () => {
    await truncateAll();
    await givenCatalog();
    given = await givenRunningApp({nodeEnv: 'production'});
    admin = asUser(given.client, await givenUser(given.app, 'admin'));
    const {body} = await admin
      .post('/api/schedulers')
      .send(givenSchedulerBody({description: 'Nightly backup'}))
      .expect(201);
    schedulerId = body.id;
    viewer = asUser(given.client, await givenUser(given.app, 'viewer'));
  });
  after(() => given.app.stop());

  it('reads a plain decimal id', async () => {
    const {body} = await viewer
      .get(`/api/schedulers/${schedulerId}`)
      .expect(200);
    expect(body.id).to.equal(schedulerId);
  });

  for (const written of [
    '0x1',
    '1e0',
    '+1',
    '01',
    '1.0',
    '0b1',
    '%201',
    '1%20',
    '-0',
  ]) {
    it(`refuses the path id ${written} with the uniform 400`, async () => {
      expect(schedulerId).to.equal(1);
      const {body} = await viewer.get(`/api/schedulers/${written}`).expect(400);
      expect(body.error).to.containDeep({
        statusCode: 400,
        name: 'BadRequestError',
        // The value as it came in the path, not the number it would have been.
        message: `Invalid data ${JSON.stringify(written)} for parameter "id".`,
      });
    });
  }

  it('refuses a fraction that rounds to a bigint id near 2^53', async () => {
    const id = 9007199254740991;
    await sql(
      `INSERT INTO scheduler_execution
         (id, scheduler_id, execution_key, container_id, status)
       VALUES ($1, $2, 'k', 'test', 'succeeded')`,
      [id, schedulerId],
    );
    await viewer.get(`/api/scheduler-executions/${id}`).expect(200);
    await viewer
      .get('/api/scheduler-executions/9007199254740990.9')
      .expect(400);
  });

  it('refuses an integer query parameter written otherwise', async () => {
    const path = `/api/schedulers/${schedulerId}/executions`;
    await viewer.get(`${path}?limit=16`).expect(200);
    const {body} = await viewer.get(`${path}?limit=0x10`).expect(400);
    expect(body.error.message).to.equal(
      'Invalid data "0x10" for parameter "limit".',
    );
    await viewer.get(`${path}?limit=1e1`).expect(400);
  });

  it('changes nothing through a write whose id is written otherwise', async () => {
    await admin.delete('/api/schedulers/0x1').expect(400);
    await admin
      .patch('/api/schedulers/01')
      .send({description: 'Renamed'})
      .expect(400);
    const {body} = await admin
      .get(`/api/schedulers/${schedulerId}`)
      .expect(200);
    expect(body.description).to.equal('Nightly backup');
  });

  it('leaves numbers inside the JSON filter to the filter rules', async () => {
    const filter = encodeURIComponent(JSON.stringify({limit: 1, skip: 0}));
    const {body} = await viewer
      .get(`/api/schedulers?filter=${filter}`)
      .expect(200);
    expect(body).to.have.length(1);
  });

  it('reads 0 where a parameter allows it', async () => {
    await viewer
      .get(`/api/schedulers/${schedulerId}/executions?skip=0`)
      .expect(200);
  });

  it('takes the place of LoopBack parse-params middleware: one parses', () => {
    const parsers = given.app.restServer.find(
      binding => binding.tagMap.group === 'parseParams',
    );
    expect(parsers.map(binding => binding.providerConstructor)).to.eql([
      CanonicalParseParamsMiddlewareProvider,
    ]);
  });

  it('still asks for a sign-in before it looks at the id', async () => {
    await given.client.get('/api/schedulers/0x1').expect(401);
  });
});
