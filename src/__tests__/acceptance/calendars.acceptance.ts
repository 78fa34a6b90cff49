import {expect} from '@loopback/testlab';
import {readFileSync} from 'node:fs';
import path from 'node:path';
import {ProducerBindings} from '../../keys';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

const HOLIDAYS_ICS = readFileSync(
  path.resolve(
    __dirname,
    '../../../src/__tests__/fixtures/calendars/holidays.ics',
  ),
  'utf8',
);
const NOW = new Date('2026-11-24T12:00:00Z');

function expectUniform(
  res: {body: {error?: Record<string, unknown>}},
  statusCode: number,
  paths?: string[],
) {
  expect(res.body.error).to.containDeep({statusCode});
  expect(res.body.error!.name).to.be.a.String();
  expect(res.body.error!.message).to.be.a.String();
  if (paths) {
    expect(
      (res.body.error!.details as Array<{path: string}>).map(d => d.path),
    ).to.deepEqual(paths);
  }
}

const holidayCalendar = (overrides: Record<string, unknown> = {}) => ({
  name: 'UK bank holidays',
  time_zone: 'Europe/London',
  kind: 'blackout',
  dates: ['2026-12-25'],
  ...overrides,
});

describe('calendars (issue 26, items 1 and 2)', () => {
  let given: TestApp;
  let admin: AuthedClient;
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
    const team = await givenTeam(given.app);
    admin = asUser(given.client, team.admin);
    operator = asUser(given.client, team.operator);
    viewer = asUser(given.client, team.viewer);
  });

  describe('the resource', () => {
    it('lets operators create, filter, patch and delete a calendar, viewers only read it, and keeps dates sorted once each', async () => {
      const created = await operator
        .post('/api/calendars')
        .send(
          holidayCalendar({
            dates: ['2026-12-26', '2026-12-25', '2026-12-25'],
            times: ['* 2-3 * * 0'],
          }),
        )
        .expect(201);
      expect(created.body).to.containDeep({
        name: 'UK bank holidays',
        kind: 'blackout',
        dates: ['2026-12-25', '2026-12-26'],
        times: ['* 2-3 * * 0'],
      });
      const id = created.body.id;
      await viewer.get(`/api/calendars/${id}`).expect(200);
      const found = await viewer
        .get('/api/calendars')
        .query({filter: JSON.stringify({where: {kind: 'blackout'}})})
        .expect(200);
      expect(found.body.map((c: {id: number}) => c.id)).to.deepEqual([id]);
      await viewer.post('/api/calendars').send(holidayCalendar()).expect(403);
      await viewer.delete(`/api/calendars/${id}`).expect(403);
      await operator
        .patch(`/api/calendars/${id}`)
        .send({kind: 'allowed'})
        .expect(200);
      await admin.delete(`/api/calendars/${id}`).expect(204);
      await viewer.get(`/api/calendars/${id}`).expect(404);
    });

    it('refuses a second calendar of the same name with 422', async () => {
      await operator.post('/api/calendars').send(holidayCalendar()).expect(201);
      const res = await operator
        .post('/api/calendars')
        .send(holidayCalendar())
        .expect(422);
      expectUniform(res, 422);
    });

    const badBodies: Array<[string, Record<string, unknown>, string[]]> = [
      ['an unknown zone', {time_zone: 'Mars/Olympus'}, ['/time_zone']],
      ['a missing zone', {time_zone: undefined}, ['/time_zone']],
      ['an unknown kind', {kind: 'maybe'}, ['/kind']],
      ['a day that does not exist', {dates: ['2026-02-30']}, ['/dates/0']],
      ['a date in another shape', {dates: ['25/12/2026']}, ['/dates/0']],
      [
        'a cron expression of six fields',
        {times: ['0 0 * * * *']},
        ['/times/0'],
      ],
      ['a cron expression out of range', {times: ['* 25 * * *']}, ['/times/0']],
    ];
    for (const [what, change, paths] of badBodies) {
      it(`refuses ${what} with 422 naming the field, on create and on patch`, async () => {
        const res = await operator
          .post('/api/calendars')
          .send(holidayCalendar(change))
          .expect(422);
        expectUniform(res, 422, paths);
        if (change.time_zone === undefined && 'time_zone' in change) return;
        const ok = await operator
          .post('/api/calendars')
          .send(holidayCalendar({name: 'ok'}))
          .expect(201);
        const patched = await operator
          .patch(`/api/calendars/${ok.body.id}`)
          .send(change)
          .expect(422);
        expectUniform(patched, 422, paths);
      });
    }
  });

  describe('import', () => {
    it('adds the yearly RRULE holiday for five years from the injected clock, and the all-day event, to the dates', async () => {
      const created = await operator
        .post('/api/calendars')
        .send(holidayCalendar({dates: ['2026-01-01']}))
        .expect(201);
      const res = await operator
        .post(`/api/calendars/${created.body.id}/import`)
        .set('Content-Type', 'text/calendar')
        .send(HOLIDAYS_ICS)
        .expect(200);
      expect(res.body).to.deepEqual({
        added: 7,
        dates_total: 8,
        timed_events_ignored: 1,
      });
      const calendar = await viewer
        .get(`/api/calendars/${created.body.id}`)
        .expect(200);
      expect(calendar.body.dates).to.deepEqual([
        '2026-01-01',
        '2026-12-25',
        '2027-03-15',
        '2027-03-16',
        '2027-12-25',
        '2028-12-25',
        '2029-12-25',
        '2030-12-25',
      ]);
      const [event] = await sql<{action: string; entity: string}>(
        `SELECT action, entity FROM audit_event WHERE entity = 'calendar' AND action = 'update'`,
      );
      expect(event).to.be.ok();
    });

    it('refuses a body that is not iCalendar with 422 on /body', async () => {
      const created = await operator
        .post('/api/calendars')
        .send(holidayCalendar())
        .expect(201);
      const res = await operator
        .post(`/api/calendars/${created.body.id}/import`)
        .set('Content-Type', 'text/calendar')
        .send('BEGIN:VCARD\r\nFN:x\r\nEND:VCARD\r\n')
        .expect(422);
      expectUniform(res, 422, ['/body']);
    });

    it('refuses a body over 1 MiB with 413, and a viewer with 403, and an unknown calendar with 404', async () => {
      const created = await operator
        .post('/api/calendars')
        .send(holidayCalendar())
        .expect(201);
      const huge = HOLIDAYS_ICS.replace(
        'SUMMARY:Christmas Day',
        `SUMMARY:${'x'.repeat(1024 * 1024)}`,
      );
      const res = await operator
        .post(`/api/calendars/${created.body.id}/import`)
        .set('Content-Type', 'text/calendar')
        .send(huge)
        .expect(413);
      expectUniform(res, 413);
      await viewer
        .post(`/api/calendars/${created.body.id}/import`)
        .set('Content-Type', 'text/calendar')
        .send(HOLIDAYS_ICS)
        .expect(403);
      const missing = await operator
        .post('/api/calendars/999/import')
        .set('Content-Type', 'text/calendar')
        .send(HOLIDAYS_ICS)
        .expect(404);
      expectUniform(missing, 404);
    });
  });

  describe('schedulers naming calendars', () => {
    it('stores calendar_ids as a plain JSON list and refuses an unknown id with 422, on create and patch', async () => {
      const calendar = await operator
        .post('/api/calendars')
        .send(holidayCalendar())
        .expect(201);
      const scheduler = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody({calendar_ids: [calendar.body.id]}))
        .expect(201);
      expect(scheduler.body.calendar_ids).to.deepEqual([calendar.body.id]);
      const unknown = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody({calendar_ids: [calendar.body.id, 424242]}))
        .expect(422);
      expectUniform(unknown, 422, ['/calendar_ids']);
      expect(unknown.body.error.details[0].message).to.match(/424242/);
      const patched = await operator
        .patch(`/api/schedulers/${scheduler.body.id}`)
        .send({calendar_ids: [424242]})
        .expect(422);
      expectUniform(patched, 422, ['/calendar_ids']);
      const notAList = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody({calendar_ids: '1'}))
        .expect(422);
      expectUniform(notAList, 422);
    });

    it('refuses more than 100 calendar_ids with 422, on create and patch (each is asked at every fire)', async () => {
      const ids = Array.from({length: 101}, (_, i) => i + 1);
      const tooMany = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody({calendar_ids: ids}))
        .expect(422);
      expectUniform(tooMany, 422, ['/calendar_ids']);
      expect(tooMany.body.error.details[0]).to.containDeep({
        code: 'maxItems',
        info: {limit: 100},
      });
      const scheduler = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody())
        .expect(201);
      const patched = await operator
        .patch(`/api/schedulers/${scheduler.body.id}`)
        .send({calendar_ids: ids})
        .expect(422);
      expectUniform(patched, 422, ['/calendar_ids']);
      expect(patched.body.error.details[0].code).to.equal('maxItems');
    });

    it('answers 409 naming the schedulers when a used calendar is deleted, and deletes it once none uses it', async () => {
      const calendar = await operator
        .post('/api/calendars')
        .send(holidayCalendar())
        .expect(201);
      const ids: number[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await operator
          .post('/api/schedulers')
          .send(givenSchedulerBody({calendar_ids: [calendar.body.id]}))
          .expect(201);
        ids.push(res.body.id);
      }
      const res = await operator
        .delete(`/api/calendars/${calendar.body.id}`)
        .expect(409);
      expectUniform(res, 409);
      expect(res.body.error.name).to.equal('ConflictError');
      expect(res.body.error.message).to.match(
        new RegExp(`schedulers ${ids[0]}, ${ids[1]}`),
      );
      expect(res.body.error.details[0].info.scheduler_ids).to.deepEqual(ids);
      for (const id of ids) {
        await operator
          .patch(`/api/schedulers/${id}`)
          .send({calendar_ids: []})
          .expect(200);
      }
      await operator.delete(`/api/calendars/${calendar.body.id}`).expect(204);
    });
  });

  describe('next runs and the preview', () => {
    it('say when the look ahead stopped early, and list no incomplete note when it did not', async () => {
      // Allowed on one day long past: every fire is skipped, so the look
      // ahead goes to its most fires (or runs out of time on a slow machine).
      const never = await operator
        .post('/api/calendars')
        .send(
          holidayCalendar({
            name: 'never',
            kind: 'allowed',
            dates: ['2001-01-01'],
          }),
        )
        .expect(201);
      const stopped = await viewer
        .post('/api/schedulers/preview')
        .send({schedule: '* * * * *', calendar_ids: [never.body.id], count: 3})
        .expect(200);
      expect(stopped.body.runs).to.deepEqual([]);
      expect(stopped.body.incomplete).to.match(
        /^the look ahead stopped after \d+ fires because (it reached its most fires for these calendars|its time ran out \(1000 ms\)): later runs may exist$/,
      );
      const whole = await viewer
        .post('/api/schedulers/preview')
        .send({
          schedule: '0 6 * * *',
          calendar_ids: [never.body.id],
          count: 3,
          ends_at: '2027-01-01T00:00:00Z',
        })
        .expect(200);
      expect(whole.body.runs).to.deepEqual([]);
      expect(whole.body).not.to.have.property('incomplete');
      // Paused: no runs, and no look ahead to call incomplete.
      const paused = await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: '* * * * *',
            status: false,
            calendar_ids: [never.body.id],
          }),
        )
        .expect(201);
      const next = await viewer
        .get(`/api/schedulers/${paused.body.id}/next-runs`)
        .expect(200);
      expect(next.body).to.containDeep({active: false, runs: [], skipped: []});
      expect(next.body).not.to.have.property('incomplete');
    });

    it('list the fires that will run and mark the skipped ones with their calendar, inside the active window', async () => {
      const calendar = await operator
        .post('/api/calendars')
        .send(holidayCalendar())
        .expect(201);
      const scheduler = await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: '0 6 * * *',
            timezone: 'Europe/London',
            calendar_ids: [calendar.body.id],
            starts_at: '2026-12-24T00:00:00Z',
            ends_at: '2026-12-27T06:00:00Z',
          }),
        )
        .expect(201);
      const next = await viewer
        .get(`/api/schedulers/${scheduler.body.id}/next-runs`)
        .query({count: 5})
        .expect(200);
      expect(next.body.runs).to.deepEqual([
        '2026-12-24T06:00:00.000Z',
        '2026-12-26T06:00:00.000Z',
        '2026-12-27T06:00:00.000Z',
      ]);
      expect(next.body.skipped).to.deepEqual([
        {
          at: '2026-12-25T06:00:00.000Z',
          calendar_id: calendar.body.id,
          calendar_name: 'UK bank holidays',
          reason: `calendar "UK bank holidays" (id ${calendar.body.id}): blackout matches this slot`,
        },
      ]);
      const preview = await viewer
        .post('/api/schedulers/preview')
        .send({
          schedule: '0 6 * * *',
          timezone: 'Europe/London',
          calendar_ids: [calendar.body.id],
          count: 2,
        })
        .expect(200);
      expect(preview.body.runs).to.have.length(2);
      expect(preview.body.skipped).to.deepEqual([]);
      const unknown = await viewer
        .post('/api/schedulers/preview')
        .send({schedule: '0 6 * * *', calendar_ids: [4242]})
        .expect(422);
      expectUniform(unknown, 422, ['/calendar_ids']);
    });

    it('refuses ends_at at or before starts_at with 422 on /ends_at', async () => {
      const res = await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            starts_at: '2026-12-24T00:00:00Z',
            ends_at: '2026-12-24T00:00:00Z',
          }),
        )
        .expect(422);
      expectUniform(res, 422, ['/ends_at']);
    });
  });

  describe('run now and backfill', () => {
    /** A blackout calendar holding the injected day (2026-11-24), and a scheduler following it. */
    async function givenBlackedOutScheduler(): Promise<{
      calendarId: number;
      schedulerId: number;
    }> {
      const calendar = await operator
        .post('/api/calendars')
        .send(holidayCalendar({time_zone: 'UTC', dates: ['2026-11-24']}))
        .expect(201);
      const scheduler = await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: '0 * * * *',
            calendar_ids: [calendar.body.id],
          }),
        )
        .expect(201);
      return {calendarId: calendar.body.id, schedulerId: scheduler.body.id};
    }

    it('ledgers a run now as skipped while a calendar skips this minute, and runs it with ignore_calendars, audited', async () => {
      const {calendarId, schedulerId} = await givenBlackedOutScheduler();
      const skipped = await operator
        .post(`/api/schedulers/${schedulerId}/run`)
        .send({})
        .expect(202);
      expect(skipped.body.status).to.equal('skipped');
      expect(skipped.body.reason).to.match(
        new RegExp(`"UK bank holidays" \\(id ${calendarId}\\)`),
      );
      const forced = await operator
        .post(`/api/schedulers/${schedulerId}/run`)
        .send({ignore_calendars: true, reason: 'month-end close'})
        .expect(202);
      expect(forced.body.status).to.equalOneOf('published', 'pending');
      const rows = await sql<{execution_key: string; status: string}>(
        `SELECT execution_key, status FROM scheduler_execution WHERE scheduler_id = $1 ORDER BY id`,
        [schedulerId],
      );
      expect(rows.map(r => r.status)).to.deepEqual([
        'skipped',
        forced.body.status === 'published' ? 'published' : 'claimed',
      ]);
      const events = await sql<{changes: Record<string, unknown>}>(
        `SELECT changes FROM audit_event WHERE action = 'run' ORDER BY id`,
      );
      expect(events[0].changes).to.have.property('skipped');
      expect(events[1].changes).to.containDeep({
        ignore_calendars: [null, true],
      });
    });

    it('backfill lists skipped slots in the dry run and ledgers them as skipped, never publishing them', async () => {
      const {schedulerId} = await givenBlackedOutScheduler();
      const range = {from: '2026-11-23T22:00:00Z', to: '2026-11-24T01:00:00Z'};
      const plan = await operator
        .post(`/api/schedulers/${schedulerId}/backfill`)
        .send({...range, dry_run: true})
        .expect(200);
      expect(plan.body.slots).to.deepEqual([
        '2026-11-23T22:00:00.000Z',
        '2026-11-23T23:00:00.000Z',
      ]);
      expect(plan.body.skipped.map((s: {at: string}) => s.at)).to.deepEqual([
        '2026-11-24T00:00:00.000Z',
        '2026-11-24T01:00:00.000Z',
      ]);
      const done = await operator
        .post(`/api/schedulers/${schedulerId}/backfill`)
        .send(range)
        .expect(202);
      expect(done.body).to.containDeep({claimed: 2, skipped: 2});
      const rows = await sql<{execution_key: string; status: string}>(
        `SELECT execution_key, status FROM scheduler_execution WHERE scheduler_id = $1 ORDER BY slot`,
        [schedulerId],
      );
      expect(rows.map(r => r.status === 'skipped')).to.deepEqual([
        false,
        false,
        true,
        true,
      ]);
    });
  });
});
