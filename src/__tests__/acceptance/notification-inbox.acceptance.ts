import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {sql, truncateAll} from '../fixtures/test-database';

/** Issue 26, item 5: each user's own notices, with an unread count. */
describe('notification inbox (/api/notifications/unread-count, /read-all)', () => {
  let given: TestApp;
  let team: Team;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    team = await givenTeam(given.app);
    for (const user of [team.admin, team.admin, team.viewer, team.viewer]) {
      await sql(
        `INSERT INTO notification (user_id, title) VALUES ($1, 'Scheduler 1 failed')`,
        [user.id],
      );
    }
    await sql(
      `UPDATE notification SET read_at = now()
        WHERE id = (SELECT min(id) FROM notification WHERE user_id = $1)`,
      [team.viewer.id],
    );
  });

  it("counts only the caller's own unread notices, for an admin too", async () => {
    const admin = await asUser(given.client, team.admin)
      .get('/api/notifications/unread-count')
      .expect(200);
    expect(admin.body).to.deepEqual({unread: 2});
    const viewer = await asUser(given.client, team.viewer)
      .get('/api/notifications/unread-count')
      .expect(200);
    expect(viewer.body).to.deepEqual({unread: 1});
    await given.client.get('/api/notifications/unread-count').expect(401);
  });

  it("marks all of the caller's notices read and nobody else's", async () => {
    const res = await asUser(given.client, team.viewer)
      .post('/api/notifications/read-all')
      .expect(200);
    expect(res.body).to.deepEqual({marked: 1});
    await asUser(given.client, team.viewer)
      .get('/api/notifications/unread-count')
      .expect(200, {unread: 0});
    await asUser(given.client, team.admin)
      .get('/api/notifications/unread-count')
      .expect(200, {unread: 2});
  });
});
