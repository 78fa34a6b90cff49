import {expect} from '@loopback/testlab';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  at,
  bodies,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

interface CalendarRow {
  name?: string;
  time_zone: string;
  kind: 'blackout' | 'allowed';
  dates?: string[];
  times?: string[];
}

async function givenCalendar(row: CalendarRow): Promise<number> {
  const [inserted] = await sql<{id: number}>(
    `INSERT INTO calendar (name, time_zone, kind, dates, times)
     VALUES ($1, $2, $3, $4::jsonb, $5::jsonb) RETURNING id`,
    [
      row.name ?? `calendar ${Math.random()}`,
      row.time_zone,
      row.kind,
      JSON.stringify(row.dates ?? []),
      JSON.stringify(row.times ?? []),
    ],
  );
  return inserted.id;
}

async function useCalendars(schedulerId: number, calendarIds: number[]) {
  await sql(`UPDATE scheduler SET calendar_ids = $2::jsonb WHERE id = $1`, [
    schedulerId,
    JSON.stringify(calendarIds),
  ]);
}

const ledger = (schedulerId: number) =>
  sql<{execution_key: string; status: string; status_reason: string | null}>(
    `SELECT execution_key, status, status_reason FROM scheduler_execution
      WHERE scheduler_id = $1 ORDER BY slot`,
    [schedulerId],
  );

/** Issue 26, item 2: calendars in the producer; item 3: the active window. */
describe('producer: calendars and the active window', () => {
  let p: TestProducer;

  async function startAt(lastSlot: string, catchUpMinutes = 5) {
    await sql('TRUNCATE producer_state');
    await sql(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', $1)`,
      [lastSlot],
    );
    p = await givenProducer({cronCatchUpMinutes: catchUpMinutes});
  }

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
  });
  afterEach(() => p?.stop());

  describe('calendars', () => {
    it('claims the 24th and 26th of a 0 6 * * * scheduler and ledgers the 25th as skipped, naming the Europe/London blackout calendar', async () => {
      const holidays = await givenCalendar({
        name: 'UK bank holidays',
        time_zone: 'Europe/London',
        kind: 'blackout',
        dates: ['2026-12-25'],
      });
      const [id] = await insertSchedulers([
        {schedule: '0 6 * * *', timezone: 'Europe/London'},
      ]);
      await useCalendars(id, [holidays]);
      await startAt('2026-12-24T05:59:00Z');
      await p.producer.tick(at('2026-12-24T06:00:00.100Z'));
      const christmas = await p.producer.tick(at('2026-12-25T06:00:00.100Z'));
      expect(christmas).to.containDeep({
        due: 1,
        claimed: 0,
        published: 0,
        skipped_calendar: 1,
      });
      await p.producer.tick(at('2026-12-26T06:00:00.100Z'));
      const rows = await ledger(id);
      expect(rows.map(r => [r.execution_key, r.status])).to.deepEqual([
        ['cron-2026-12-24-06-00', 'published'],
        ['cron-2026-12-25-06-00', 'skipped'],
        ['cron-2026-12-26-06-00', 'published'],
      ]);
      expect(rows[1].status_reason).to.match(
        new RegExp(`calendar "UK bank holidays" \\(id ${holidays}\\)`),
      );
      // Two messages: the 25th was never published.
      const sent = bodies(await drainQueue(TASK_QUEUE));
      expect(sent.map(m => m.scheduler_id)).to.deepEqual([id, id]);
    });

    it("reads the calendar in its own zone, not the scheduler's, across London's spring-forward", async () => {
      // 19:30 in New York is 23:30 UTC; from 28 March 2027 London is on
      // BST, so that instant is already 00:30 on the 29th in London.
      const londonDay = await givenCalendar({
        time_zone: 'Europe/London',
        kind: 'blackout',
        dates: ['2027-03-29'],
      });
      const [id] = await insertSchedulers([
        {schedule: '30 19 * * *', timezone: 'America/New_York'},
      ]);
      await useCalendars(id, [londonDay]);
      await startAt('2027-03-27T23:29:00Z');
      for (const day of ['27', '28', '29']) {
        await p.producer.tick(at(`2027-03-${day}T23:30:00.100Z`));
      }
      expect(
        (await ledger(id)).map(r => [r.execution_key, r.status]),
      ).to.deepEqual([
        ['cron-2027-03-27-23-30', 'published'],
        ['cron-2027-03-28-23-30', 'skipped'],
        ['cron-2027-03-29-23-30', 'published'],
      ]);
    });

    it('fires only on the days an allowed calendar of trading days matches', async () => {
      const trading = await givenCalendar({
        name: 'Trading days',
        time_zone: 'UTC',
        kind: 'allowed',
        times: ['* * * * 1-5'],
        dates: [],
      });
      const [id] = await insertSchedulers([{schedule: '0 6 * * *'}]);
      await useCalendars(id, [trading]);
      // Friday 27 November 2026, then the weekend, then Monday.
      await startAt('2026-11-27T05:59:00Z');
      for (const day of ['27', '28', '29', '30']) {
        await p.producer.tick(at(`2026-11-${day}T06:00:00.100Z`));
      }
      const rows = await ledger(id);
      expect(rows.map(r => r.status)).to.deepEqual([
        'published',
        'skipped',
        'skipped',
        'published',
      ]);
      expect(rows[1].status_reason).to.match(
        /"Trading days".*no allowed calendar/,
      );
    });

    it('skips the fires inside a times window (Sunday 02:00-03:59), also in catch-up, and blackout wins over allowed', async () => {
      const maintenance = await givenCalendar({
        name: 'Sunday maintenance',
        time_zone: 'UTC',
        kind: 'blackout',
        times: ['* 2-3 * * 0'],
      });
      const always = await givenCalendar({
        name: 'Always',
        time_zone: 'UTC',
        kind: 'allowed',
        times: ['* * * * *'],
      });
      const [id] = await insertSchedulers([{schedule: '*/30 * * * *'}]);
      await useCalendars(id, [always, maintenance]);
      // Sunday 29 November 2026; one tick catches up 01:00 to 04:30.
      await startAt('2026-11-29T00:59:00Z', 240);
      await p.producer.tick(at('2026-11-29T04:30:00.100Z'));
      const rows = await ledger(id);
      expect(rows.map(r => [r.execution_key.slice(16), r.status])).to.deepEqual(
        [
          ['01-00', 'published'],
          ['01-30', 'published'],
          ['02-00', 'skipped'],
          ['02-30', 'skipped'],
          ['03-00', 'skipped'],
          ['03-30', 'skipped'],
          ['04-00', 'published'],
          ['04-30', 'published'],
        ],
      );
      expect(rows[2].status_reason).to.match(/"Sunday maintenance"/);
    });

    it('applies a calendar edit at the next tick, without a restart', async () => {
      const calendar = await givenCalendar({
        time_zone: 'UTC',
        kind: 'blackout',
        dates: [],
      });
      const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
      await useCalendars(id, [calendar]);
      await startAt('2026-11-24T09:59:00Z');
      await p.producer.tick(at('2026-11-24T10:00:00.100Z'));
      await sql(`UPDATE calendar SET dates = '["2026-11-24"]' WHERE id = $1`, [
        calendar,
      ]);
      await p.producer.tick(at('2026-11-24T10:01:00.100Z'));
      await sql(`UPDATE calendar SET dates = '[]' WHERE id = $1`, [calendar]);
      await p.producer.tick(at('2026-11-24T10:02:00.100Z'));
      expect((await ledger(id)).map(r => r.status)).to.deepEqual([
        'published',
        'skipped',
        'published',
      ]);
    });
  });

  describe('the active window', () => {
    it('never fires before starts_at, even when catch-up reaches back before it', async () => {
      const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
      await sql(
        `UPDATE scheduler SET starts_at = '2026-11-24T10:03:00Z' WHERE id = $1`,
        [id],
      );
      await startAt('2026-11-24T09:59:00Z', 5);
      await p.producer.tick(at('2026-11-24T10:05:00.100Z'));
      expect((await ledger(id)).map(r => r.execution_key)).to.deepEqual([
        'cron-2026-11-24-10-03',
        'cron-2026-11-24-10-04',
        'cron-2026-11-24-10-05',
      ]);
    });

    it('fires up to ends_at included, never after, then turns the scheduler inactive with a reason and an audit event', async () => {
      const [id, other] = await insertSchedulers([
        {schedule: '* * * * *'},
        {schedule: '* * * * *'},
      ]);
      await sql(
        `UPDATE scheduler SET ends_at = '2026-11-24T10:02:00Z' WHERE id = $1`,
        [id],
      );
      await startAt('2026-11-24T09:59:00Z', 5);
      // Catch-up across the boundary: 10:00 to 10:04 in one tick.
      await p.producer.tick(at('2026-11-24T10:04:00.100Z'));
      expect((await ledger(id)).map(r => r.execution_key)).to.deepEqual([
        'cron-2026-11-24-10-00',
        'cron-2026-11-24-10-01',
        'cron-2026-11-24-10-02',
      ]);
      expect(await ledger(other)).to.have.length(5);
      const [row] = await sql<{status: boolean; status_reason: string}>(
        `SELECT status, status_reason FROM scheduler WHERE id = $1`,
        [id],
      );
      expect(row.status).to.be.false();
      expect(row.status_reason).to.match(/active window ended/);
      const events = await sql<{action: string; entity_id: string}>(
        `SELECT action, entity_id FROM audit_event WHERE entity = 'scheduler'`,
      );
      expect(events).to.deepEqual([
        {action: 'deactivate', entity_id: String(id)},
      ]);
      // Later ticks neither fire it nor audit it again.
      await p.producer.tick(at('2026-11-24T10:05:00.100Z'));
      expect(await ledger(id)).to.have.length(3);
      expect(
        await sql(`SELECT 1 FROM audit_event WHERE entity = 'scheduler'`),
      ).to.have.length(1);
    });
  });
});
