import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('GET /api/system/runs-per-hour', () => {
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

  /** One run claimed `hoursAgo` hours before the database's now. */
  async function givenRun(status: string, hoursAgo: number, key: string) {
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, executed_at, container_id, status)
       SELECT s.id, $1, now() - make_interval(hours => $2), 'test', $3
         FROM scheduler s LIMIT 1`,
      [key, hoursAgo, status],
    );
  }

  it('answers 24 hourly buckets, oldest first, counting runs by outcome', async () => {
    await sql(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('w', '* * * * *', 1)`,
    );
    await givenRun('succeeded', 0, 'a');
    await givenRun('succeeded', 0, 'b');
    await givenRun('failed', 0, 'c');
    await givenRun('running', 0, 'd');
    await givenRun('failed', 5, 'e');
    await givenRun('succeeded', 30, 'too-old');
    const res = await asUser(given.client, team.viewer)
      .get('/api/system/runs-per-hour')
      .expect(200);
    const {hours} = res.body;
    expect(hours).to.have.length(24);
    const starts = hours.map((h: {hour: string}) => Date.parse(h.hour));
    for (let i = 1; i < starts.length; i++) {
      expect(starts[i] - starts[i - 1]).to.equal(3600_000);
    }
    expect(new Date(starts[23]).getUTCMinutes()).to.equal(0);
    // The runs of "now" are in the current hour, or the one before when the
    // hour turned between the inserts and the request.
    const [previous, current] = hours.slice(-2);
    expect({
      succeeded: previous.succeeded + current.succeeded,
      failed: previous.failed + current.failed,
      other: previous.other + current.other,
    }).to.deepEqual({succeeded: 2, failed: 1, other: 1});
    const total = hours.reduce(
      (sum: number, h: {succeeded: number; failed: number; other: number}) =>
        sum + h.succeeded + h.failed + h.other,
      0,
    );
    expect(total).to.equal(5);
    expect(hours.some((h: {failed: number}) => h.failed === 1)).to.be.true();
  });

  it('needs a token', async () => {
    await given.client.get('/api/system/runs-per-hour').expect(401);
  });
});
