import {expect} from '@loopback/testlab';
import {ProducerBindings} from '../../keys';
import {TASK_QUEUE} from '../../queue/topology';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {givenNeverMatchingCalendars} from '../fixtures/slow-calendars';

describe('backfill (issue 15, item 5)', () => {
  const NOW = new Date('2026-11-23T12:00:00Z');
  let given: TestApp;
  let team: Team;
  let operator: AuthedClient;

  before(async () => {
    given = await givenRunningApp({}, app =>
      app.bind(ProducerBindings.CLOCK).to(() => NOW),
    );
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    team = await givenTeam(given.app);
    operator = asUser(given.client, team.operator);
  });

  const hourly = async () =>
    (
      await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody({schedule: '0 * * * *'}))
        .expect(201)
    ).body.id as number;

  it('claims what the dry run listed, with the scheduled keys, never a slot that already ran', async () => {
    const id = await hourly();
    const range = {from: '2026-11-23T06:00:00Z', to: '2026-11-23T09:30:00Z'};
    const {body: plan} = await operator
      .post(`/api/schedulers/${id}/backfill`)
      .send({...range, dry_run: true})
      .expect(200);
    expect(plan).to.deepEqual({
      slots: [
        '2026-11-23T06:00:00.000Z',
        '2026-11-23T07:00:00.000Z',
        '2026-11-23T08:00:00.000Z',
        '2026-11-23T09:00:00.000Z',
      ],
      count: 4,
      skipped: [],
    });
    expect(await sql(`SELECT * FROM scheduler_execution`)).to.deepEqual([]);
    // 07:00 ran on schedule: the backfill must not run it again.
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, container_id, status)
       VALUES ($1, 'cron-2026-11-23-07-00', '2026-11-23T07:00:00Z', 'p1', 'succeeded')`,
      [id],
    );
    const {body} = await operator
      .post(`/api/schedulers/${id}/backfill`)
      .set('X-Change-Reason', 'the broker was down')
      .send(range)
      .expect(202);
    expect(body).to.deepEqual({
      claimed: 3,
      already_claimed: 1,
      published: 3,
      skipped: 0,
    });
    const rows = await sql<{
      execution_key: string;
      trigger: string;
      status: string;
    }>(
      `SELECT execution_key, trigger, status FROM scheduler_execution ORDER BY slot`,
    );
    expect(rows).to.deepEqual([
      {
        execution_key: 'cron-2026-11-23-06-00',
        trigger: 'backfill',
        status: 'published',
      },
      {
        execution_key: 'cron-2026-11-23-07-00',
        trigger: 'schedule',
        status: 'succeeded',
      },
      {
        execution_key: 'cron-2026-11-23-08-00',
        trigger: 'backfill',
        status: 'published',
      },
      {
        execution_key: 'cron-2026-11-23-09-00',
        trigger: 'backfill',
        status: 'published',
      },
    ]);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(3);
    const [event] = await sql<{action: string; reason: string}>(
      `SELECT action, reason FROM audit_event WHERE action = 'backfill'`,
    );
    expect(event).to.deepEqual({
      action: 'backfill',
      reason: 'the broker was down',
    });
    // Again: everything is already claimed.
    const {body: again} = await operator
      .post(`/api/schedulers/${id}/backfill`)
      .send(range)
      .expect(202);
    expect(again).to.deepEqual({
      claimed: 0,
      already_claimed: 4,
      published: 0,
      skipped: 0,
    });
  });

  it("takes only the slots inside the scheduler's active window, as the producer would (review: it ran slots outside it)", async () => {
    const id = await hourly();
    await sql(
      `UPDATE scheduler SET starts_at = '2026-11-23T07:00:00Z', ends_at = '2026-11-23T09:00:00Z' WHERE id = $1`,
      [id],
    );
    const dryRun = async (from: string, to = '2026-11-23T11:00:00Z') =>
      (
        await operator
          .post(`/api/schedulers/${id}/backfill`)
          .send({from, to, dry_run: true})
          .expect(200)
      ).body;
    const plan = await dryRun('2026-11-23T05:00:00Z');
    // starts_at's slot fires, and so does a slot exactly at ends_at.
    expect(plan.slots).to.deepEqual([
      '2026-11-23T07:00:00.000Z',
      '2026-11-23T08:00:00.000Z',
      '2026-11-23T09:00:00.000Z',
    ]);
    // The slot cap counts only slots inside the window: a range reaching
    // months before starts_at still lists the window's slots.
    expect((await dryRun('2026-06-01T00:00:00Z')).count).to.equal(3);
    // A starts_at inside a minute leaves that minute's slot out (review).
    await sql(
      `UPDATE scheduler SET starts_at = '2026-11-23T07:00:30Z' WHERE id = $1`,
      [id],
    );
    expect((await dryRun('2026-11-23T05:00:00Z')).slots).to.deepEqual([
      '2026-11-23T08:00:00.000Z',
      '2026-11-23T09:00:00.000Z',
    ]);
    // A range wholly outside the window claims nothing and audits nothing.
    const {body: none} = await operator
      .post(`/api/schedulers/${id}/backfill`)
      .send({from: '2026-11-23T10:00:00Z', to: '2026-11-23T11:00:00Z'})
      .expect(202);
    expect(none).to.deepEqual({
      claimed: 0,
      already_claimed: 0,
      published: 0,
      skipped: 0,
    });
    expect(
      await sql(`SELECT id FROM audit_event WHERE action = 'backfill'`),
    ).to.deepEqual([]);
    expect(await sql(`SELECT id FROM scheduler_execution`)).to.deepEqual([]);
  });

  /**
   * A daily scheduler naming 100 allowed calendars in 100 zones that never
   * match: each of 990 daily slots is judged by all of them, a second or
   * more of work.
   */
  const slowToJudge = async () => {
    const calendarIds = await givenNeverMatchingCalendars(operator);
    return (
      await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: '0 3 * * *',
            timezone: 'Europe/Berlin',
            calendar_ids: calendarIds,
          }),
        )
        .expect(201)
    ).body.id as number;
  };
  /** 990 daily slots, all in the past. */
  const days990 = {
    from: new Date(NOW.getTime() - 990 * 86_400_000).toISOString(),
    to: new Date(NOW.getTime() - 60_000).toISOString(),
  };

  it('keeps answering other requests while it judges many slots by many calendars (it held the event loop for seconds)', async () => {
    const id = await slowToJudge();
    const started = performance.now();
    let backfillMs = 0;
    const backfill = operator
      .post(`/api/schedulers/${id}/backfill`)
      .send({...days990, dry_run: true})
      .then(res => res)
      .finally(() => (backfillMs = performance.now() - started));
    // Another client's requests, one after another, while it runs.
    const pings: number[] = [];
    while (backfillMs === 0) {
      const sent = performance.now();
      await given.client.get('/api/ping').expect(200);
      pings.push(performance.now() - sent);
    }
    const {status, body: plan} = await backfill;
    expect(status).to.equal(200);
    expect(plan.count).to.equal(0);
    expect(plan.skipped).to.have.length(990);
    // Held for the whole work, a ping waited about as long as the backfill
    // took; shared, it waits about two turns (TURN_MS, 10 ms).
    expect(Math.max(...pings)).to.be.below(backfillMs / 4);
  });

  it('answers 404 when the scheduler is deleted while its slots are judged (review: a 422 about a missing record)', async () => {
    const id = await slowToJudge();
    const backfill = operator
      .post(`/api/schedulers/${id}/backfill`)
      .send(days990)
      .then(res => res);
    await new Promise(resolve => setTimeout(resolve, 200));
    await operator.delete(`/api/schedulers/${id}`).expect(204);
    const res = await backfill;
    expect(res.status).to.equal(404);
    expect(res.body.error.message).to.equal(
      `Entity not found: Scheduler with id ${id}`,
    );
    expect(await sql(`SELECT id FROM scheduler_execution`)).to.deepEqual([]);
    expect(
      await sql(`SELECT id FROM audit_event WHERE action = 'backfill'`),
    ).to.deepEqual([]);
  });

  it('refuses one-time schedulers, reversed or future ranges, too many slots, viewers and unknown ids', async () => {
    const id = await hourly();
    const once = (
      await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: undefined,
            date_time: '2026-12-01T00:00:00Z',
          }),
        )
        .expect(201)
    ).body.id;
    const refused = async (target: number, body: object, code: string) => {
      const res = await operator
        .post(`/api/schedulers/${target}/backfill`)
        .send(body)
        .expect(422);
      expect(
        res.body.error.details.map((d: {code: string}) => d.code),
      ).to.containEql(code);
    };
    await refused(
      once,
      {from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z'},
      'recurringOnly',
    );
    await refused(
      id,
      {from: '2026-11-22T00:00:00Z', to: '2026-11-21T00:00:00Z'},
      'range',
    );
    await refused(
      id,
      {from: '2026-11-22T00:00:00Z', to: '2026-11-24T00:00:00Z'},
      'future',
    );
    // Hourly for 60 days: 1,440 slots.
    await refused(
      id,
      {from: '2026-09-01T00:00:00Z', to: '2026-10-31T00:00:00Z'},
      'tooManySlots',
    );
    await operator
      .post(`/api/schedulers/${id}/backfill`)
      .send({from: 'yesterday', to: '2026-11-21T00:00:00Z'})
      .expect(422);
    await asUser(given.client, team.viewer)
      .post(`/api/schedulers/${id}/backfill`)
      .send({from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z'})
      .expect(403);
    await operator
      .post('/api/schedulers/999999/backfill')
      .send({from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z'})
      .expect(404);
    expect(await sql(`SELECT * FROM scheduler_execution`)).to.deepEqual([]);
  });
});
