import {expect} from '@loopback/testlab';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

const inMinutes = (minutes: number) =>
  new Date(Date.now() + minutes * 60_000).toISOString();

type ErrorBody = {
  error: {
    statusCode: number;
    details: Array<{path: string; code: string; message: string}>;
  };
};

/** Issue 13 at the API: when a scheduler may fire, in the words people type. */
describe('Scheduler API: timing rules', () => {
  let given: TestApp;
  let api: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    api = asUser(given.client, (await givenTeam(given.app)).operator);
  });

  const create = (overrides: Record<string, unknown>) =>
    api.post('/api/schedulers').send(givenSchedulerBody(overrides));
  const oneTime = (dateTime: string) =>
    create({schedule: undefined, date_time: dateTime});

  describe('one-time date_time', () => {
    it('refuses a date_time before the current minute on create (422 naming it)', async () => {
      const res = await oneTime(inMinutes(-60)).expect(422);
      const [detail] = (res.body as ErrorBody).error.details;
      expect(detail).to.containDeep({path: '/date_time', code: 'past'});
      expect(detail.message).to.match(/is in the past/);
    });

    it('accepts a date_time later in the current minute, and ahead', async () => {
      await oneTime(new Date().toISOString()).expect(201);
      await oneTime(inMinutes(5)).expect(201);
    });

    it('with CRON_CATCHUP_MINUTES=0 refuses the current minute, which no tick would fire (review: accepted, then switched off as missed)', async () => {
      const strict = await givenRunningApp({cronCatchUpMinutes: 0});
      try {
        const operator = asUser(
          strict.client,
          (await givenTeam(strict.app)).operator,
        );
        const send = (dateTime: string) =>
          operator
            .post('/api/schedulers')
            .send(
              givenSchedulerBody({schedule: undefined, date_time: dateTime}),
            );
        const nextMinute = new Date(Math.ceil(Date.now() / 60_000) * 60_000);
        const res = await send(
          new Date(nextMinute.getTime() - 60_000).toISOString(),
        ).expect(422);
        expect((res.body as ErrorBody).error.details[0]).to.containDeep({
          path: '/date_time',
          code: 'past',
        });
        await send(inMinutes(2)).expect(201);
      } finally {
        await strict.app.stop();
      }
    });

    it('refuses a past date_time on PATCH and when resuming a one-time scheduler whose moment has passed', async () => {
      const created = (await oneTime(inMinutes(5)).expect(201)).body;
      await api
        .patch(`/api/schedulers/${created.id}`)
        .send({date_time: inMinutes(-10)})
        .expect(422);
      // It ran (or was missed) and was switched off; its moment is gone.
      await sql(
        `UPDATE scheduler SET status = false, date_time = now() - interval '1 hour' WHERE id = $1`,
        [created.id],
      );
      const resumed = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({status: true})
        .expect(422);
      expect((resumed.body as ErrorBody).error.details[0].path).to.equal(
        '/date_time',
      );
      // Other edits of such a scheduler stay possible.
      await api
        .patch(`/api/schedulers/${created.id}`)
        .send({description: 'done'})
        .expect(200);
      await api
        .patch(`/api/schedulers/${created.id}`)
        .send({status: true, date_time: inMinutes(10)})
        .expect(200);
    });
  });

  describe('activation and the reason a scheduler is off', () => {
    it('shows activated_at and status_reason, and refuses them in bodies', async () => {
      const before = Date.now();
      const created = (await create({status: false}).expect(201)).body;
      expect(Date.parse(created.activated_at)).to.be.aboveOrEqual(
        before - 1000,
      );
      expect(created.status_reason).to.be.null();
      await create({activated_at: '2020-01-01T00:00:00Z'}).expect(422);
      await api
        .patch(`/api/schedulers/${created.id}`)
        .send({status_reason: 'mine'})
        .expect(422);

      await sql(
        `UPDATE scheduler SET status_reason = 'one-time run missed', activated_at = '2020-01-01Z' WHERE id = $1`,
        [created.id],
      );
      const resumed = await api
        .patch(`/api/schedulers/${created.id}`)
        .send({status: true})
        .expect(200);
      expect(resumed.body.status_reason).to.be.null();
      expect(Date.parse(resumed.body.activated_at)).to.be.aboveOrEqual(
        before - 1000,
      );
    });
  });

  describe('the cron dialect', () => {
    it('stores names and macros as written', async () => {
      for (const schedule of ['0 9 * * MON-FRI', '@daily', '0 0 1 jan,jul *']) {
        const res = await create({schedule}).expect(201);
        expect(res.body.schedule).to.equal(schedule);
      }
    });

    it('refuses Quartz and seconds syntax with a message that says what is supported', async () => {
      for (const schedule of ['0 0 ? * MON', '0 0 0 * * *', '@reboot']) {
        const res = await create({schedule}).expect(422);
        const [detail] = (res.body as ErrorBody).error.details;
        expect(detail.path).to.equal('/schedule');
        expect(detail.message).to.match(
          /not supported.*month names JAN-DEC, weekday names SUN-SAT/,
        );
      }
    });
  });

  it('names the field when only the database refuses a zone (known to ICU, not to PostgreSQL)', async () => {
    const res = await create({timezone: 'US/Pacific-New'}).expect(422);
    expect((res.body as ErrorBody).error.details[0]).to.containDeep({
      path: '/timezone',
      code: 'timezone',
    });
  });

  it('refuses an unknown time zone with 422 before the database sees it', async () => {
    const res = await create({timezone: 'Europe/Berln'}).expect(422);
    expect((res.body as ErrorBody).error.details[0].path).to.equal('/timezone');
  });
});
