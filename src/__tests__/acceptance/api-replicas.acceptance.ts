import {expect} from '@loopback/testlab';
import {loadConfig} from '../../config';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, givenTeam, TEST_PASSWORD, Team} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/**
 * Issue 23, item 7: API replicas behind a load balancer keep nothing in
 * memory that changes answers. Two API instances on one database: whatever
 * one does, the other answers the same.
 */
describe('two API replicas on one database', () => {
  const STAY_ALIVE_MAX = 3;
  let a: TestApp;
  let b: TestApp;
  let team: Team;

  before(async () => {
    // No JWT_SECRET: both read the installation's own secret from the database.
    const overrides = {
      jwt: {...loadConfig({}).jwt, secret: undefined},
      stayAlive: {...loadConfig({}).stayAlive, maxWorkers: STAY_ALIVE_MAX},
    };
    a = await givenRunningApp(overrides);
    b = await givenRunningApp(overrides);
  });
  after(async () => {
    await a.app.stop();
    await b.app.stop();
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(a.app);
  });

  it('accepts on one replica the token the other issued at sign-in', async () => {
    const {body} = await a.client
      .post('/api/auth/login')
      .send({email: team.operator.email, password: TEST_PASSWORD})
      .expect(200);
    const token = body.token ?? body.access_token;
    expect(token).to.be.a.String();
    await asUser(b.client, {token}).get('/api/schedulers').expect(200);
  });

  it('shows on one replica what was written through the other', async () => {
    const admin = {
      a: asUser(a.client, team.admin),
      b: asUser(b.client, team.admin),
    };
    const {body: created} = await admin.a
      .post('/api/schedulers')
      .send(givenSchedulerBody())
      .expect(201);
    const {body: seen} = await admin.b
      .get(`/api/schedulers/${created.id}`)
      .expect(200);
    expect(seen.description).to.equal(created.description);
    await admin.b
      .patch(`/api/schedulers/${created.id}`)
      .send({status: false})
      .expect(200);
    const {body: after} = await admin.a
      .get(`/api/schedulers/${created.id}`)
      .expect(200);
    expect(after.status).to.be.false();
  });

  it('holds STAY_ALIVE_MAX across replicas saving at once', async () => {
    const body = givenSchedulerBody({
      schedule: undefined,
      report_id: undefined,
      params: {},
      worker_id: 4,
      stay_alive: true,
    });
    const answers = await Promise.all(
      Array.from({length: 10}, (_, i) =>
        asUser((i % 2 ? a : b).client, team.admin)
          .post('/api/schedulers')
          .send(body),
      ),
    );
    expect(answers.filter(res => res.status === 201)).to.have.length(
      STAY_ALIVE_MAX,
    );
    const [{n}] = await sql<{n: number}>(
      `SELECT count(*)::int AS n FROM scheduler WHERE stay_alive`,
    );
    expect(n).to.equal(STAY_ALIVE_MAX);
  });
});
