import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, truncateAll} from '../fixtures/test-database';

const nested = (depth: number): unknown =>
  depth <= 1 ? 1 : {n: nested(depth - 1)};

/**
 * Found by the API fuzzer: a config value nested some thousands of levels
 * deep was stored, and every later GET /api/config answered 500 (JSON.stringify
 * overflowed the stack). Such bodies are refused at the door.
 */
describe('JSON bodies nested too deep', () => {
  let given: TestApp;
  let team: Team;
  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
  });

  it('refuses a body nested deeper than 64 levels with 400 and stores nothing', async () => {
    const admin = asUser(given.client, team.admin);
    const res = await admin
      .post('/api/config')
      .set('Content-Type', 'application/json')
      // Built as text: JSON.stringify itself cannot write this deep.
      .send(
        `{"key":"deep","value":${'{"n":'.repeat(5000)}1${'}'.repeat(5000)}}`,
      )
      .expect(400);
    expect(res.body.error).to.containDeep({
      statusCode: 400,
      message: 'request body is nested deeper than 64 levels',
    });
    await admin.get('/api/config').expect(200);
  });

  it('accepts ordinary nesting', async () => {
    await asUser(given.client, team.admin)
      .post('/api/config')
      .send({key: 'shallow', value: nested(40)})
      .expect(201);
    const list = await asUser(given.client, team.admin)
      .get('/api/config')
      .expect(200);
    expect(list.body.map((row: {key: string}) => row.key)).to.containEql(
      'shallow',
    );
  });
});
