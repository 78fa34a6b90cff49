import {expect} from '@loopback/testlab';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {truncateAll} from '../fixtures/test-database';

describe('GET /api/auth/me', () => {
  let given: TestApp;
  let team: Team;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    team = await givenTeam(given.app);
  });

  it('answers who the token belongs to and their role, for every role', async () => {
    for (const user of [team.admin, team.operator, team.viewer]) {
      const res = await asUser(given.client, user)
        .get('/api/auth/me')
        .expect(200);
      expect(res.body).to.deepEqual({
        id: user.id,
        email: user.email,
        name: `Test ${user.role}`,
        role: user.role,
      });
    }
  });

  it('is 401 without a token and never shows a password hash', async () => {
    await given.client.get('/api/auth/me').expect(401);
    const res = await asUser(given.client, team.admin)
      .get('/api/auth/me')
      .expect(200);
    expect(JSON.stringify(res.body)).to.not.match(/password/);
  });
});
