import {expect} from '@loopback/testlab';
import {containing} from '../../crud/crud-controller.factory';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('search with ?q= (issue 15, item 8)', () => {
  let given: TestApp;
  let team: Team;
  let viewer: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
    viewer = asUser(given.client, team.viewer);
    const operator = asUser(given.client, team.operator);
    for (const [description, region, status] of [
      ['Nightly REVENUE export', 'north', true],
      ['Weekly stock count', 'south', true],
      ['Revenue forecast 100%', 'east', false],
    ] as const) {
      await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            description,
            status,
            params: {
              controller: 'SalesReport',
              options_interface: {delivery: {email: true}},
              region,
            },
          }),
        )
        .expect(201);
    }
  });

  const descriptions = async (query: string) => {
    const res = await viewer.get(`/api/schedulers?${query}`).expect(200);
    return res.body.map((s: {description: string}) => s.description).sort();
  };

  it('finds text case-insensitively in the description and the params, combined with filter', async () => {
    expect(await descriptions('q=revenue')).to.deepEqual([
      'Nightly REVENUE export',
      'Revenue forecast 100%',
    ]);
    expect(await descriptions('q=SOUTH')).to.deepEqual(['Weekly stock count']);
    expect(
      await descriptions(
        `q=revenue&filter=${encodeURIComponent('{"where":{"status":true}}')}`,
      ),
    ).to.deepEqual(['Nightly REVENUE export']);
    // Wildcards are text: "%" matches only a literal percent sign.
    expect(await descriptions('q=%25')).to.deepEqual(['Revenue forecast 100%']);
    // "_" is no single-character wildcard either (only the params hold one).
    expect(await descriptions('q=t_c')).to.deepEqual([]);
  });

  it('never shows or takes the search column, and bounds q', async () => {
    const {body} = await viewer.get('/api/schedulers?q=stock').expect(200);
    expect(body[0]).to.not.have.property('search_text');
    await asUser(given.client, team.operator)
      .post('/api/schedulers')
      .send(givenSchedulerBody({search_text: 'x'}))
      .expect(422);
    await viewer.get(`/api/schedulers?q=${'x'.repeat(201)}`).expect(400);
  });

  it('searches failed tasks in their params and failure reason', async () => {
    await sql(
      `INSERT INTO failed_task (scheduler_id, type, task_id, params_scheduler, payload, failed_reason, failed_at)
       VALUES (1, 'worker', 1, '{"batch":"alpha"}', '{}', 'worker exited with code 3', now()),
              (1, 'worker', 1, '{"batch":"beta"}', '{}', 'Connection REFUSED by smtp', now())`,
    );
    const reasons = async (q: string) =>
      (await viewer.get(`/api/failed-tasks?q=${q}`).expect(200)).body.map(
        (f: {failed_reason: string}) => f.failed_reason,
      );
    expect(await reasons('refused')).to.deepEqual([
      'Connection REFUSED by smtp',
    ]);
    expect(await reasons('ALPHA')).to.deepEqual(['worker exited with code 3']);
  });

  it('escapes the pattern characters of a term', () => {
    expect(containing('50%_a\\b')).to.equal('%50\\%\\_a\\\\b%');
  });
});
