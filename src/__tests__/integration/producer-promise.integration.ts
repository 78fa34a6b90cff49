import {expect} from '@loopback/testlab';
import {publishClaims} from '../../producer/claim-publisher';
import {CleanupTimer} from '../../producer/cleanup-timer';
import {claimRuns} from '../../producer/execution-claimer';
import {sweepUnpublished} from '../../producer/sweeper';
import type {Confirmations} from '../../queue/task-publisher';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  ageClaims,
  at,
  bodies,
  bulkInsertSchedulers,
  executionRows,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

const lastSlotWas = (iso: string) =>
  sql(`INSERT INTO producer_state (name, last_slot) VALUES ('ticks', $1)`, [
    iso,
  ]);
const schedulerRow = async (id: number) =>
  (
    await sql<{status: boolean; status_reason: string | null}>(
      'SELECT status, status_reason FROM scheduler WHERE id = $1',
      [id],
    )
  )[0];

/** Issue 13: every due run fires once and on time. */
describe('producer: every due run fires once and on time', () => {
  const running: TestProducer[] = [];
  async function producer(overrides = {}, name = 'p1') {
    const created = await givenProducer(overrides, name);
    running.push(created);
    return created;
  }

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql('TRUNCATE producer_state');
    await resetBroker();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map(p => p.stop()));
  });

  describe('one-time schedulers', () => {
    it('fire one created mid-minute for later in that minute at the next tick, never before its minute', async () => {
      await lastSlotWas('2026-11-21T10:04:00Z');
      const p = await producer({cronCatchUpMinutes: 5});
      // The 10:05 tick ran before the scheduler existed.
      await p.producer.tick(at('2026-11-21T10:05:00.100Z'));
      const [sameMinute, nextMinute] = await insertSchedulers([
        {schedule: null, date_time: '2026-11-21T10:05:40Z'},
        {schedule: null, date_time: '2026-11-21T10:07:00Z'},
      ]);

      const tick = await p.producer.tick(at('2026-11-21T10:06:00.100Z'));

      expect(tick).to.containDeep({claimed: 1, published: 1});
      const [message] = await drainQueue(TASK_QUEUE);
      expect(bodies([message])[0].scheduler_id).to.equal(sameMinute);
      expect(message.properties.headers?.['x-execution-key']).to.equal(
        'cron-2026-11-21-10-05',
      );
      expect(await schedulerRow(sameMinute)).to.deepEqual({
        status: false,
        status_reason: 'one-time run sent (cron-2026-11-21-10-05)',
      });
      // The one for 10:07 is not started in the 10:06 tick.
      expect((await schedulerRow(nextMinute)).status).to.be.true();
      await p.producer.tick(at('2026-11-21T10:07:00.100Z'));
      expect(
        bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id),
      ).to.deepEqual([nextMinute]);
    });

    it('switch one older than the catch-up window off with a reason, and fire none for it', async () => {
      await lastSlotWas('2026-11-21T09:00:00Z');
      // Written by SQL with microseconds, which JavaScript dates do not carry.
      const [stale] = await insertSchedulers([
        {schedule: null, date_time: '2026-11-21T09:30:00.123456Z'},
      ]);
      const p = await producer({cronCatchUpMinutes: 5});
      const tick = await p.producer.tick(at('2026-11-21T10:00:01Z'));
      expect(tick).to.containDeep({claimed: 0, missed_one_time: 1});
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
      expect(await schedulerRow(stale)).to.deepEqual({
        status: false,
        status_reason:
          'one-time run missed: its date_time is older than the catch-up window (5 min)',
      });
      expect(
        p.logs.find('One-time run missed (older than the catch-up window)'),
      ).to.have.length(1);
    });

    it('stay active when re-armed for another moment after their claim (a late sweep does not switch them off)', async () => {
      const [oneTime] = await insertSchedulers([
        {schedule: null, date_time: '2026-11-21T10:00:10Z'},
      ]);
      const p = await producer({cronCatchUpMinutes: 5});
      await lastSlotWas('2026-11-21T10:00:00Z');
      // A producer that died claimed 10:00 and never published it.
      await claimRuns(
        p.pool,
        [{schedulerId: oneTime, slot: at('2026-11-21T10:00:00Z')}],
        'died',
      );
      // Meanwhile the user re-armed it for 10:30.
      await sql(
        `UPDATE scheduler SET date_time = '2026-11-21T10:30:00Z' WHERE id = $1`,
        [oneTime],
      );
      await ageClaims(31);

      const tick = await p.producer.tick(at('2026-11-21T10:01:05Z'));

      expect(tick.swept).to.equal(1);
      expect((await schedulerRow(oneTime)).status).to.be.true();
      await p.producer.tick(at('2026-11-21T10:30:01Z'));
      expect((await schedulerRow(oneTime)).status).to.be.false();
      const keys = (await drainQueue(TASK_QUEUE)).map(
        m => m.properties.headers?.['x-execution-key'],
      );
      expect(keys).to.deepEqual([
        'cron-2026-11-21-10-00',
        'cron-2026-11-21-10-30',
      ]);
    });
  });

  describe('catch-up bounded by activation', () => {
    it('fires nothing on a fresh database for slots before a scheduler was activated', async () => {
      const [created] = await insertSchedulers([
        {schedule: '* * * * *', activated_at: '2026-11-21T10:05:20Z'},
      ]);
      const p = await producer({cronCatchUpMinutes: 5});

      const first = await p.producer.tick(at('2026-11-21T10:05:30Z'));
      expect(first).to.containDeep({slots: 6, due: 0, claimed: 0});

      const next = await p.producer.tick(at('2026-11-21T10:06:00.100Z'));
      expect(next).to.containDeep({slots: 1, claimed: 1});
      expect(
        (await executionRows()).map(row => [
          row.scheduler_id,
          row.execution_key,
        ]),
      ).to.deepEqual([[created, 'cron-2026-11-21-10-06']]);
    });

    it('fires at the next tick the minute of a scheduler activated just before it but committed after its tick read the candidates', async () => {
      await lastSlotWas('2026-11-21T10:05:00Z');
      const p = await producer({cronCatchUpMinutes: 5});
      // The 10:06 tick reads the candidates before the commit of a scheduler
      // created at 10:05:59.995 (a slow commit, or a database clock behind
      // the producer's): its 10:06 run is due but was not seen.
      await p.producer.tick(at('2026-11-21T10:06:00.010Z'));
      const [late, early, seen] = await insertSchedulers([
        {schedule: '* * * * *', activated_at: '2026-11-21T10:05:59.995Z'},
        // Activated long enough before 10:06 to have been seen then.
        {schedule: '* * * * *', activated_at: '2026-11-21T10:05:30Z'},
        // Just before 10:07, and committed before the 10:07 tick reads.
        {schedule: '* * * * *', activated_at: '2026-11-21T10:06:59.990Z'},
      ]);
      const keys = async () =>
        (await executionRows()).map(row => [
          row.scheduler_id,
          row.execution_key,
        ]);

      const next = await p.producer.tick(at('2026-11-21T10:07:00.010Z'));

      expect(next).to.containDeep({
        slots: 1,
        due: 3,
        claimed: 4,
        published: 4,
        already_claimed: 0,
        late_activated: 1,
      });
      expect(await keys()).to.deepEqual([
        [late, 'cron-2026-11-21-10-06'],
        [late, 'cron-2026-11-21-10-07'],
        [early, 'cron-2026-11-21-10-07'],
        [seen, 'cron-2026-11-21-10-07'],
      ]);
      // The 10:08 tick looks back at 10:07 for `seen`: its run is there, so
      // it is not claimed twice.
      const after = await p.producer.tick(at('2026-11-21T10:08:00.010Z'));
      expect(after).to.containDeep({
        claimed: 3,
        already_claimed: 0,
        late_activated: 0,
      });
      expect(await keys()).to.have.length(7);
    });

    it('does not look back at a scheduler changed since the minute began: its tick saw it and decided', async () => {
      await lastSlotWas('2026-11-21T10:05:00Z');
      const p = await producer({cronCatchUpMinutes: 5});
      // Seen by the 10:06 tick, which rightly refused 10:06: it starts later.
      const [windowed] = await insertSchedulers([
        {schedule: '* * * * *', activated_at: '2026-11-21T10:05:59.995Z'},
      ]);
      await sql(
        `UPDATE scheduler SET starts_at = '2026-11-21T10:10:00Z' WHERE id = $1`,
        [windowed],
      );
      expect(
        await p.producer.tick(at('2026-11-21T10:06:00.010Z')),
      ).to.containDeep({due: 0, claimed: 0});
      // Then its window is widened to the past. The trigger sets updated_at
      // to the change's time (the real clock, after the test's 10:06).
      await sql(`UPDATE scheduler SET starts_at = NULL WHERE id = $1`, [
        windowed,
      ]);

      const next = await p.producer.tick(at('2026-11-21T10:07:00.010Z'));

      expect(next).to.containDeep({claimed: 1, late_activated: 0});
      expect(
        (await executionRows()).map(row => row.execution_key),
      ).to.deepEqual(['cron-2026-11-21-10-07']);
    });

    it('looks back at no minute outside the catch-up window (CRON_CATCHUP_MINUTES=0)', async () => {
      await lastSlotWas('2026-11-21T10:05:00Z');
      const p = await producer({cronCatchUpMinutes: 0});
      await p.producer.tick(at('2026-11-21T10:06:00.010Z'));
      await insertSchedulers([
        {schedule: '* * * * *', activated_at: '2026-11-21T10:05:59.995Z'},
      ]);

      const next = await p.producer.tick(at('2026-11-21T10:07:00.010Z'));

      expect(next).to.containDeep({claimed: 1, late_activated: 0});
      expect(
        (await executionRows()).map(row => row.execution_key),
      ).to.deepEqual(['cron-2026-11-21-10-07']);
    });

    it('catches up a resumed scheduler only from the minute after it was resumed', async () => {
      // Paused long ago, resumed at 10:02:30 while the producer was down.
      await insertSchedulers([
        {schedule: '* * * * *', activated_at: '2026-11-21T10:02:30Z'},
      ]);
      await lastSlotWas('2026-11-21T09:59:00Z');
      const p = await producer({cronCatchUpMinutes: 10});
      await p.producer.tick(at('2026-11-21T10:05:01Z'));
      expect(
        (await executionRows()).map(row => row.execution_key),
      ).to.deepEqual([
        'cron-2026-11-21-10-03',
        'cron-2026-11-21-10-04',
        'cron-2026-11-21-10-05',
      ]);
    });

    it('moves activated_at on create, resume and a new schedule, zone or date, for any writer', async () => {
      const [id] = await insertSchedulers([
        {schedule: '* * * * *', status: false},
      ]);
      const activatedAt = async () =>
        (
          await sql<{activated_at: Date}>(
            'SELECT activated_at FROM scheduler WHERE id = $1',
            [id],
          )
        )[0].activated_at.getTime();
      const long = await activatedAt();
      const moves = async (change: string) => {
        await sql(
          `UPDATE scheduler SET activated_at = '2000-01-01Z' WHERE id = $1`,
          [id],
        );
        await sql(`UPDATE scheduler SET ${change} WHERE id = $1`, [id]);
        return (await activatedAt()) > long;
      };
      expect(await moves(`description = 'renamed'`)).to.be.false();
      expect(await moves(`params = '{"a":1}'`)).to.be.false();
      expect(await moves('status = true')).to.be.true();
      expect(await moves('status = false')).to.be.false();
      expect(await moves(`schedule = '*/5 * * * *'`)).to.be.true();
      expect(await moves(`timezone = 'Europe/Berlin'`)).to.be.true();
      expect(
        await moves(
          `schedule = NULL, date_time = '2030-01-01Z', timezone = NULL`,
        ),
      ).to.be.true();
      const [fresh] = await sql<{activated_at: Date}>(
        `INSERT INTO scheduler (description, schedule, report_id)
         VALUES ('new', '* * * * *', 1) RETURNING activated_at`,
      );
      expect(Date.now() - fresh.activated_at.getTime()).to.be.below(60_000);
    });
  });

  describe('bad rows', () => {
    it('an unreadable time zone stops only its own scheduler, with one warning', async () => {
      // Written before the zone check existed (or by a restore).
      await sql(
        'ALTER TABLE scheduler DISABLE TRIGGER scheduler_timezone_known',
      );
      let bad: number;
      try {
        [bad] = await insertSchedulers([
          {schedule: '* * * * *', timezone: 'Europe/Berln'},
        ]);
      } finally {
        await sql(
          'ALTER TABLE scheduler ENABLE TRIGGER scheduler_timezone_known',
        );
      }
      const [good, oneTime] = await insertSchedulers([
        {schedule: '* * * * *', timezone: 'Europe/Berlin'},
        {schedule: null, date_time: '2026-11-21T10:01:00Z'},
      ]);
      const p = await producer({cronCatchUpMinutes: 0});

      const first = await p.producer.tick(at('2026-11-21T10:00:01Z'));
      const second = await p.producer.tick(at('2026-11-21T10:01:01Z'));

      expect(first).to.containDeep({invalid: 1, published: 1});
      expect(second).to.containDeep({invalid: 1, published: 2});
      expect(
        bodies(await drainQueue(TASK_QUEUE))
          .map(m => m.scheduler_id)
          .sort(),
      ).to.deepEqual([good, good, oneTime].sort());
      const warnings = p.logs.find('Scheduler skipped: unreadable timezone');
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.containDeep({
        level: 'warn',
        scheduler_id: bad!,
        timezone: 'Europe/Berln',
      });
      expect(p.logs.find('Tick completed')).to.have.length(2);
    });

    it('keeps unknown zones out of the table for every writer', async () => {
      const insert = (zone: string) =>
        sql(
          `INSERT INTO scheduler (description, schedule, report_id, timezone)
           VALUES ('z', '* * * * *', 1, $1)`,
          [zone],
        );
      for (const zone of [
        'Europe/Berln',
        'posix/Europe/Berlin',
        'XYZ+3',
        'localtime',
        '../../etc/passwd',
      ]) {
        await expect(insert(zone)).to.be.rejectedWith(
          /unknown time zone|scheduler_timezone_known/,
        );
      }
      for (const zone of [
        'Europe/Berlin',
        'europe/berlin',
        'UTC',
        'Etc/GMT+3',
      ]) {
        await insert(zone);
      }
      const [row] = await sql<{id: number}>(
        `SELECT id FROM scheduler WHERE timezone = 'UTC'`,
      );
      await expect(
        sql(`UPDATE scheduler SET timezone = 'Mars/Olympus' WHERE id = $1`, [
          row.id,
        ]),
      ).to.be.rejectedWith(/unknown time zone "Mars\/Olympus"/);
    });
  });

  describe('a truthful ledger', () => {
    it('records when each claim was written and when each confirm arrived, for a 1,000-run batch', async () => {
      await bulkInsertSchedulers(1000, '* * * * *');
      const p = await producer({cronCatchUpMinutes: 0});
      let confirmations: Confirmations = new Map();
      const publish = p.publisher.publish.bind(p.publisher);
      p.publisher.publish = async tasks => {
        confirmations = await publish(tasks);
        return confirmations;
      };
      const [before] = await sql<{now: Date}>(
        'SELECT clock_timestamp() AS now',
      );

      // The tick's clock says 2026-11-21; the ledger must say when things happened.
      await p.producer.tick(at('2026-11-21T10:00:00.100Z'));

      const rows = await sql<{
        id: string;
        executed_at: Date;
        published_at: Date;
      }>(
        'SELECT id, executed_at, published_at FROM scheduler_execution ORDER BY id',
      );
      expect(rows).to.have.length(1000);
      expect(confirmations.size).to.equal(1000);
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i];
        expect(row.executed_at.getTime()).to.be.aboveOrEqual(
          before.now.getTime(),
        );
        if (i > 0) {
          expect(row.executed_at.getTime()).to.be.aboveOrEqual(
            rows[i - 1].executed_at.getTime(),
          );
        }
        expect(row.published_at.getTime()).to.equal(
          confirmations.get(Number(row.id))!.getTime(),
        );
        expect(row.published_at.getTime()).to.be.aboveOrEqual(
          rows[rows.length - 1].executed_at.getTime(),
        );
      }
    });
  });

  describe('sweeping', () => {
    it('fires each scheduler at most CRON_CATCHUP_MINUTES + 1 times after a 2-hour broker outage', async () => {
      const ids = await insertSchedulers([
        {schedule: '* * * * *'},
        {schedule: '*/2 * * * *'},
      ]);
      await lastSlotWas('2026-11-21T09:59:00Z');
      const p = await producer({
        cronCatchUpMinutes: 5,
        cronSweepAfterMs: 30_000,
      });
      await p.connection.stop();
      const outageStart = at('2026-11-21T10:00:01Z').getTime();
      for (let minute = 0; minute < 120; minute++) {
        await p.producer.tick(new Date(outageStart + minute * 60_000));
      }
      expect((await executionRows()).filter(r => r.published_at)).to.be.empty();
      await p.connection.start();
      await ageClaims(31);

      const back = await p.producer.tick(at('2026-11-21T12:00:01Z'));

      const messages = bodies(await drainQueue(TASK_QUEUE));
      const runs = (id: number) =>
        messages.filter(m => m.scheduler_id === id).length;
      expect(runs(ids[0])).to.equal(6);
      expect(runs(ids[1])).to.equal(3);
      expect(back).to.containDeep({published: 2, swept: 7});
      const skipped = await sql<{status_reason: string; count: string}>(
        `SELECT status_reason, count(*) FROM scheduler_execution
          WHERE status = 'skipped' GROUP BY status_reason`,
      );
      expect(skipped).to.deepEqual([
        {
          status_reason:
            'not sent: its minute is older than the catch-up window',
          count: String(120 + 60 - 7),
        },
      ]);
    });

    it('never marks skipped a claim another producer is publishing right now', async () => {
      const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
      const a = await producer({cronCatchUpMinutes: 5}, 'a');
      const b = await producer({cronCatchUpMinutes: 5}, 'b');
      // A claims 10:00 and is still waiting for its confirm when B ticks at
      // 10:06, where 10:00 has just left the catch-up window.
      const claims = await claimRuns(
        a.pool,
        [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}],
        'a',
      );
      await lastSlotWas('2026-11-21T10:05:00Z');
      const tick = await b.producer.tick(at('2026-11-21T10:06:00.100Z'));
      expect(tick.skipped_stale).to.equal(0);
      await publishClaims(a.pool, a.publisher, claims);
      const rows = await executionRows();
      expect(
        rows.map(row => [row.execution_key, row.status, !!row.published_at]),
      ).to.deepEqual([
        ['cron-2026-11-21-10-00', 'published', true],
        ['cron-2026-11-21-10-06', 'published', true],
      ]);
    });

    it('republishes claims in batches until none is left, within its time budget', async () => {
      await bulkInsertSchedulers(25, '* * * * *');
      const p = await producer({cronCatchUpMinutes: 5});
      await p.connection.stop();
      await lastSlotWas('2026-11-21T09:59:00Z');
      await p.producer.tick(at('2026-11-21T10:00:01Z'));
      await p.connection.start();
      await ageClaims(31);
      const options = {
        olderThanMs: 30_000,
        staleBefore: at('2026-11-21T09:55:00Z'),
        batchSize: 10,
      };

      // A spent budget: one batch, the rest waits for the next tick.
      let ms = 0;
      const spent = await sweepUnpublished(p.pool, p.publisher, {
        ...options,
        budgetMs: 5,
        elapsedClock: () => (ms += 10),
      });
      expect(spent).to.deepEqual({republished: 10, skipped: 0});

      const rest = await sweepUnpublished(p.pool, p.publisher, {
        ...options,
        budgetMs: 60_000,
      });
      expect(rest).to.deepEqual({republished: 15, skipped: 0});
      expect(await drainQueue(TASK_QUEUE)).to.have.length(25);
    });

    it('reads claim ages from the database clock, so a producer whose host clock runs ahead republishes nothing live', async () => {
      await insertSchedulers([{schedule: '0 0 1 1 *'}]);
      const [id] = await insertSchedulers([{schedule: '0 0 1 1 *'}]);
      const p = await producer({
        cronCatchUpMinutes: 30,
        cronSweepAfterMs: 30_000,
      });
      await lastSlotWas('2026-11-21T10:00:00Z');
      await claimRuns(
        p.pool,
        [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}],
        'another-producer',
      );
      // This host's clock is ten minutes ahead of the one that claimed.
      const tick = await p.producer.tick(at('2026-11-21T10:10:00Z'));
      expect(tick).to.containDeep({swept: 0, skipped_stale: 0});
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    });
  });

  describe('the daily cleanup', () => {
    async function givenOldAndRecentRuns(old: number) {
      const [id] = await insertSchedulers([{schedule: '0 0 1 1 *'}]);
      await sql(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, executed_at, container_id)
         SELECT $1::int, 'cron-old-' || n, '2026-10-21T02:00:00Z'::timestamptz, 'x'
           FROM generate_series(1, $2::int) n
         UNION ALL SELECT $1::int, 'cron-recent', '2026-10-23T02:00:00Z', 'x'`,
        [id, old],
      );
    }
    const keys = async () =>
      (await executionRows()).map(row => row.execution_key);

    it('is not run by the tick', async () => {
      await givenOldAndRecentRuns(1);
      const p = await producer({cronCatchUpMinutes: 0});
      await p.producer.tick(at('2026-11-21T03:00:01Z'));
      expect(await keys()).to.deepEqual(['cron-old-1', 'cron-recent']);
    });

    it('deletes executions older than 30 days once a day from 03:00, on one instance only, and slot leases older than a day', async () => {
      await givenOldAndRecentRuns(3);
      await sql(
        `INSERT INTO producer_slot_lease (slot, holder, done_at) VALUES
           ('2026-11-20T02:59:00Z', 'x', now()), ('2026-11-20T03:01:00Z', 'x', now())`,
      );
      const p = await producer();
      let now = at('2026-11-21T02:59:01Z');
      const timer = (name: string) =>
        new CleanupTimer(
          p.pool,
          () => now,
          {timeZone: 'UTC', budgetMs: 60_000, intervalMs: 60_000},
          p.logs.logger.child({instance: name}),
        );
      const [a, b] = [timer('a'), timer('b')];
      await a.runOnce();
      expect(await keys()).to.have.length(4);
      now = at('2026-11-21T03:00:01Z');
      await Promise.all([a.runOnce(), b.runOnce()]);
      expect(await keys()).to.deepEqual(['cron-recent']);
      expect(
        (await sql<{slot: Date}>('SELECT slot FROM producer_slot_lease')).map(
          row => row.slot.toISOString(),
        ),
      ).to.deepEqual(['2026-11-20T03:01:00.000Z']);
      expect(
        p.logs.find('Old executions deleted').map(line => line.deleted),
      ).to.deepEqual([3]);
      await Promise.all([a.runOnce(), b.runOnce()]);
      expect(p.logs.find('Old executions deleted')).to.have.length(1);
    });

    it('deletes in batches within its budget and resumes an unfinished cleanup at the next pass', async () => {
      await givenOldAndRecentRuns(5);
      const p = await producer();
      const timer = new CleanupTimer(
        p.pool,
        () => at('2026-11-21T03:00:01Z'),
        {timeZone: 'UTC', budgetMs: 0, intervalMs: 60_000, batchSize: 2},
        p.logs.logger,
      );
      await timer.runOnce();
      expect(await keys()).to.have.length(4);
      await timer.runOnce();
      await timer.runOnce();
      expect(await keys()).to.deepEqual(['cron-recent']);
      expect(
        p.logs
          .find('Old executions deleted')
          .map(line => [line.deleted, line.finished]),
      ).to.deepEqual([
        [2, false],
        [2, false],
        [1, true],
      ]);
    });
  });
});
