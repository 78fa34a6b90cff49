import {expect} from '@loopback/testlab';
import {ProducerBindings} from '../../keys';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('next runs and the live preview (issue 15, items 2 and 3)', () => {
  const NOW = new Date('2026-11-23T10:00:00Z'); // a Monday
  let given: TestApp;
  let team: Team;
  let operator: AuthedClient;
  let viewer: AuthedClient;

  before(async () => {
    given = await givenRunningApp({}, app =>
      app.bind(ProducerBindings.CLOCK).to(() => NOW),
    );
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
    operator = asUser(given.client, team.operator);
    viewer = asUser(given.client, team.viewer);
  });

  async function created(overrides: Record<string, unknown>): Promise<number> {
    const {body} = await operator
      .post('/api/schedulers')
      .send(givenSchedulerBody(overrides))
      .expect(201);
    return body.id;
  }

  it("lists a cron scheduler's next runs in its zone, with the schedule in words", async () => {
    const id = await created({
      schedule: '0 9 * * MON-FRI',
      timezone: 'Europe/Berlin',
    });
    const {body} = await viewer
      .get(`/api/schedulers/${id}/next-runs?count=3`)
      .expect(200);
    expect(body).to.deepEqual({
      timezone: 'Europe/Berlin',
      description: 'At 09:00 AM, Monday through Friday',
      active: true,
      // 09:00 in Berlin is 08:00 UTC in winter; Monday's has passed at 10:00 UTC.
      runs: [
        '2026-11-24T08:00:00.000Z',
        '2026-11-25T08:00:00.000Z',
        '2026-11-26T08:00:00.000Z',
      ],
      // No calendars: nothing skipped.
      skipped: [],
    });
    const {body: ten} = await viewer.get(`/api/schedulers/${id}/next-runs`);
    expect(ten.runs).to.have.length(10);
  });

  it('ignores a calendar whose stored zone it cannot read, as the producer does (review: next-runs answered 500)', async () => {
    const id = await created({schedule: '0 2 * * *'});
    const [calendar] = await sql<{id: number}>(
      `INSERT INTO calendar (name, kind, time_zone, dates, times)
       VALUES ('written around the API', 'blackout', 'Mars/Olympus', '[]', '["* * * * *"]')
       RETURNING id`,
    );
    await sql(`UPDATE scheduler SET calendar_ids = $2::jsonb WHERE id = $1`, [
      id,
      JSON.stringify([calendar.id]),
    ]);
    const {body} = await viewer
      .get(`/api/schedulers/${id}/next-runs?count=2`)
      .expect(200);
    expect(body.runs).to.eql([
      '2026-11-24T02:00:00.000Z',
      '2026-11-25T02:00:00.000Z',
    ]);
    expect(body.skipped).to.eql([]);
  });

  it('lists no runs for a recurring scheduler in a zone the producer cannot read, as it never fires it (review: 500)', async () => {
    const id = await created({schedule: '0 2 * * *'});
    await sql(
      `BEGIN;
       SET LOCAL session_replication_role = replica;
       UPDATE scheduler SET timezone = 'Mars/Olympus' WHERE id = ${Number(id)};
       COMMIT;`,
    );
    const {body} = await viewer
      .get(`/api/schedulers/${id}/next-runs?count=2`)
      .expect(200);
    expect(body).to.containDeep({
      timezone: 'Mars/Olympus',
      runs: [],
      skipped: [],
    });
  });

  it('follows the DST rule of the producer: a run the gap skips fires once after it', async () => {
    const id = await created({
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
    });
    await sql(`UPDATE scheduler SET schedule = '30 2 28 3 *' WHERE id = $1`, [
      id,
    ]);
    const {body} = await viewer
      .get(`/api/schedulers/${id}/next-runs?count=2`)
      .expect(200);
    // 2027-03-28 02:30 does not exist in Berlin: it fires at 03:00 CEST (01:00 UTC).
    expect(body.runs).to.deepEqual([
      '2027-03-28T01:00:00.000Z',
      '2028-03-28T00:30:00.000Z',
    ]);
  });

  it('lists a one-time run while ahead, and none for a paused or stay-alive scheduler', async () => {
    const once = await created({
      schedule: undefined,
      date_time: '2026-12-01T07:30:00Z',
    });
    const {body: ahead} = await viewer
      .get(`/api/schedulers/${once}/next-runs`)
      .expect(200);
    expect(ahead.runs).to.deepEqual(['2026-12-01T07:30:00.000Z']);
    expect(ahead.description).to.equal('Once, at 2026-12-01T07:30:00.000Z');
    const paused = await created({status: false});
    const {body: none} = await viewer
      .get(`/api/schedulers/${paused}/next-runs`)
      .expect(200);
    expect(none).to.containDeep({active: false, runs: []});
    const stayAlive = await asUser(given.client, team.admin)
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({
          schedule: undefined,
          report_id: undefined,
          params: {},
          worker_id: 4,
          stay_alive: true,
        }),
      )
      .expect(201);
    const {body: continuous} = await viewer
      .get(`/api/schedulers/${stayAlive.body.id}/next-runs`)
      .expect(200);
    expect(continuous.runs).to.deepEqual([]);
  });

  it("lists a one-time run as the producer will fire it: its minute's tick still to come, inside the active window (review: neither was applied)", async () => {
    const once = await created({
      schedule: undefined,
      date_time: '2026-12-01T07:30:00Z',
    });
    const runsOf = async () =>
      (await viewer.get(`/api/schedulers/${once}/next-runs`).expect(200)).body
        .runs;
    // Its minute is the current one: the tick at 10:00 fires it.
    await sql(`UPDATE scheduler SET date_time = $2 WHERE id = $1`, [
      once,
      NOW.toISOString(),
    ]);
    expect(await runsOf()).to.deepEqual([NOW.toISOString()]);
    // After ends_at the producer never fires it.
    await sql(
      `UPDATE scheduler SET date_time = '2026-12-01T07:30:00Z', ends_at = '2026-12-01T07:00:00Z' WHERE id = $1`,
      [once],
    );
    expect(await runsOf()).to.deepEqual([]);
    // Before starts_at neither.
    await sql(
      `UPDATE scheduler SET ends_at = NULL, starts_at = '2026-12-01T08:00:00Z' WHERE id = $1`,
      [once],
    );
    expect(await runsOf()).to.deepEqual([]);
  });

  it('with CRON_CATCHUP_MINUTES=0 leaves out a one-time run in the current minute, which only a late tick would fire', async () => {
    const strict = await givenRunningApp({cronCatchUpMinutes: 0}, app =>
      app.bind(ProducerBindings.CLOCK).to(() => NOW),
    );
    try {
      const once = await created({
        schedule: undefined,
        date_time: '2026-12-01T07:30:00Z',
      });
      const runsAt = async (dateTime: string) => {
        await sql(`UPDATE scheduler SET date_time = $2 WHERE id = $1`, [
          once,
          dateTime,
        ]);
        const strictViewer = asUser(strict.client, team.viewer);
        return (
          await strictViewer
            .get(`/api/schedulers/${once}/next-runs`)
            .expect(200)
        ).body.runs;
      };
      expect(await runsAt('2026-11-23T10:00:30Z')).to.deepEqual([]);
      expect(await runsAt('2026-11-23T10:01:00Z')).to.deepEqual([
        '2026-11-23T10:01:00.000Z',
      ]);
    } finally {
      await strict.app.stop();
    }
  });

  it("judges a one-time date_time against the service's clock, the one its next runs are listed by", async () => {
    // The machine's clock had passed 2026-12-01 while the tests' clock
    // stood at NOW: creating at NOW + 1 min was refused as past.
    const soon = new Date(NOW.getTime() + 60_000).toISOString();
    const once = await created({schedule: undefined, date_time: soon});
    const {body} = await viewer
      .get(`/api/schedulers/${once}/next-runs`)
      .expect(200);
    expect(body.runs).to.deepEqual([soon]);
    const res = await operator
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({
          schedule: undefined,
          date_time: '2026-11-23T09:59:00Z',
        }),
      )
      .expect(422);
    expect(res.body.error.details[0]).to.containDeep({
      path: '/date_time',
      code: 'past',
    });
    expect(res.body.error.details[0].message).to.match(
      /at or after 2026-11-23T10:00:00\.000Z/,
    );
  });

  it('refuses a count out of range, an unknown id and a missing token', async () => {
    const id = await created({});
    for (const count of ['0', '101', 'ten', '1.5']) {
      const res = await viewer.get(
        `/api/schedulers/${id}/next-runs?count=${count}`,
      );
      expect(res.status).to.be.oneOf([400, 422]);
      expect(res.body.error.statusCode).to.equal(res.status);
    }
    await viewer.get('/api/schedulers/999999/next-runs').expect(404);
    await given.client.get(`/api/schedulers/${id}/next-runs`).expect(401);
  });

  it('takes an overlap policy on save: allow by default, skip on request, nothing else', async () => {
    const {body: plain} = await operator
      .post('/api/schedulers')
      .send(givenSchedulerBody())
      .expect(201);
    expect(plain.overlap_policy).to.equal('allow');
    const {body: skipping} = await operator
      .post('/api/schedulers')
      .send(givenSchedulerBody({overlap_policy: 'skip'}))
      .expect(201);
    expect(skipping.overlap_policy).to.equal('skip');
    await operator
      .patch(`/api/schedulers/${plain.id}`)
      .send({overlap_policy: 'sometimes'})
      .expect(422);
  });

  it('previews a schedule being typed, in words and runs', async () => {
    const {body} = await viewer
      .post('/api/schedulers/preview')
      .send({schedule: '*/15 * * * *', timezone: 'Asia/Kolkata', count: 2})
      .expect(200);
    expect(body).to.deepEqual({
      valid: true,
      timezone: 'Asia/Kolkata',
      active: true,
      description: 'Every 15 minutes',
      runs: ['2026-11-23T10:15:00.000Z', '2026-11-23T10:30:00.000Z'],
      skipped: [],
    });
  });

  it('answers an invalid preview with the same 422 details as creating the scheduler', async () => {
    for (const bad of [
      {schedule: '61 * * * *'},
      {schedule: '0 9 * * *', timezone: 'Mars/Olympus'},
      {schedule: '0 9 * * *', date_time: '2027-01-01T00:00:00Z'},
      {},
    ]) {
      const preview = await viewer
        .post('/api/schedulers/preview')
        .send(bad)
        .expect(422);
      const create = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody({schedule: undefined, ...bad}))
        .expect(422);
      expect(preview.body.error.details).to.deepEqual(
        create.body.error.details,
      );
    }
    await viewer
      .post('/api/schedulers/preview')
      .send({schedule: '* * * * *', count: 1000})
      .expect(422);
  });
});
