import {expect} from '@loopback/testlab';
import type {TickReport} from '../../producer/tick-report';
import amqp, {Channel} from 'amqplib';
import {loadConfig} from '../../config';
import {
  CLAIM_BATCH,
  CLAIM_BATCH_UNDER_POOLER,
  claimBatchSize,
  claimRuns,
} from '../../producer/execution-claimer';
import {
  assertTopology,
  brokerTopology,
  TASK_QUEUE,
  retrySettings,
  TopologyMismatchError,
} from '../../queue/topology';
import {
  allowVhostAccess,
  closeVhostConnections,
  refuseVhostAccess,
  drainQueue,
  resetBroker,
  TEST_AMQP_URL,
  TEST_RETRY_ENV,
} from '../fixtures/test-broker';
import {
  givenCatalog,
  sql,
  truncateAll,
  withClient,
  TEST_DATABASE_URL,
} from '../fixtures/test-database';
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

describe('producer (cron-scheduler)', () => {
  const running: TestProducer[] = [];
  async function producer(overrides = {}, name = 'p1') {
    const created = await givenProducer(overrides, name);
    running.push(created);
    return created;
  }

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await withClient(TEST_DATABASE_URL, c =>
      c.query('TRUNCATE producer_state'),
    );
    await resetBroker();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map(p => p.stop()));
  });

  it('publishes one spec task message per due scheduler, persistent, with id and key headers', async () => {
    const [everyMinute, notDue, oneTime, worker] = await insertSchedulers([
      {
        schedule: '* * * * *',
        report_id: 2,
        params: {
          controller: 'Sales',
          options_interface: {delivery: {email: true}},
        },
      },
      {schedule: '30 6 * * *'},
      {
        schedule: null,
        date_time: '2026-11-21T10:00:30Z',
        reminder_id: 3,
        params: {message: 'hi'},
      },
      {schedule: '*/5 * * * *', worker_id: 4, params: {batch: 10}},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    const [before] = await sql<{now: Date}>('SELECT clock_timestamp() AS now');
    const report = await p.producer.tick(at('2026-11-21T10:00:05Z'));
    const after = new Date();
    expect(report).to.containDeep({
      slots: 1,
      due: 3,
      claimed: 3,
      already_claimed: 0,
      published: 3,
    });

    const messages = await drainQueue(TASK_QUEUE);
    const byScheduler = new Map(bodies(messages).map(b => [b.scheduler_id, b]));
    expect(byScheduler.get(everyMinute)).to.deepEqual({
      type: 'report',
      id: 2,
      scheduler_id: everyMinute,
      params_scheduler: JSON.stringify({
        controller: 'Sales',
        options_interface: {delivery: {email: true}},
      }),
    });
    expect(byScheduler.get(oneTime)).to.containDeep({type: 'reminder', id: 3});
    expect(byScheduler.get(worker)).to.containDeep({
      type: 'worker',
      id: 4,
      params_scheduler: '{"batch":10}',
    });
    expect(byScheduler.has(notDue)).to.be.false();
    for (const message of messages) {
      expect(message.properties.deliveryMode).to.equal(2);
      expect(message.properties.headers?.['x-execution-key']).to.equal(
        'cron-2026-11-21-10-00',
      );
      expect(message.properties.headers?.['x-execution-id']).to.be.a.Number();
    }

    const rows = await executionRows();
    expect(rows.map(r => r.status)).to.deepEqual([
      'published',
      'published',
      'published',
    ]);
    for (const row of rows) {
      expect(row.slot.toISOString()).to.equal('2026-11-21T10:00:00.000Z');
      // The ledger's times are the real moments (database clock for the
      // claim, the confirm's arrival for the publish), not the tick's clock.
      expect(row.executed_at.getTime()).to.be.aboveOrEqual(
        before.now.getTime(),
      );
      expect(row.published_at.getTime()).to.be.aboveOrEqual(
        row.executed_at.getTime(),
      );
      expect(row.published_at.getTime()).to.be.belowOrEqual(after.getTime());
      expect(row.container_id).to.equal(`p1-${process.pid}`);
    }
  });

  it('disables a one-time scheduler once its publish is confirmed', async () => {
    const [oneTime] = await insertSchedulers([
      {schedule: null, date_time: '2026-11-21T10:00:00Z'},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    await p.producer.tick(at('2026-11-21T10:00:01Z'));
    const {rows} = await withClient(TEST_DATABASE_URL, c =>
      c.query('SELECT status FROM scheduler WHERE id = $1', [oneTime]),
    );
    expect(rows[0].status).to.be.false();
    expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
  });

  it('evaluates a slot once in a fleet: one of three racing producers takes its lease, the others wait for it', async () => {
    await bulkInsertSchedulers(200, '* * * * *');
    const racers = await Promise.all(
      ['a', 'b', 'c'].map(name => producer({cronCatchUpMinutes: 0}, name)),
    );
    const reports = await Promise.all(
      racers.map(r => r.producer.tick(at('2026-11-21T10:00:02Z'))),
    );
    expect(reports.filter(r => r.slots === 1)).to.have.length(1);
    expect(reports.filter(r => r.slots_by_peers === 1)).to.have.length(2);
    expect(reports.reduce((sum, r) => sum + r.claimed, 0)).to.equal(200);
    expect(reports.reduce((sum, r) => sum + r.already_claimed, 0)).to.equal(0);
    const messages = bodies(await drainQueue(TASK_QUEUE));
    expect(messages).to.have.length(200);
    expect(new Set(messages.map(m => m.scheduler_id)).size).to.equal(200);
    expect(await executionRows()).to.have.length(200);
    const rows = await sql<{holder: string; done: boolean}>(
      `SELECT holder, done_at IS NOT NULL AS done FROM producer_slot_lease`,
    );
    expect(rows).to.have.length(1);
    expect(rows[0].done).to.be.true();
  });

  it('publishes exactly one message per due scheduler even when three producers evaluate the same slot (the claim key decides)', async () => {
    await bulkInsertSchedulers(200, '* * * * *');
    // One holder name for all three: each may take the lease, as after a
    // take-over race, so all three evaluate and race on the claims.
    const racers = await Promise.all(
      ['a', 'b', 'c'].map(name =>
        producer({cronCatchUpMinutes: 0, containerId: 'shared'}, name),
      ),
    );
    const reports = await Promise.all(
      racers.map(r => r.producer.tick(at('2026-11-21T10:00:02Z'))),
    );
    expect(reports.reduce((sum, r) => sum + r.claimed, 0)).to.equal(200);
    // Each racer that evaluated met the others' claims; on a busy machine a
    // racer may come when the slot is already done and evaluate nothing.
    const evaluated = reports.filter(r => r.claimed + r.already_claimed > 0);
    expect(reports.reduce((sum, r) => sum + r.already_claimed, 0)).to.equal(
      200 * (evaluated.length - 1),
    );
    const messages = bodies(await drainQueue(TASK_QUEUE));
    expect(messages).to.have.length(200);
    expect(new Set(messages.map(m => m.scheduler_id)).size).to.equal(200);
    expect(await executionRows()).to.have.length(200);
  });

  it('claims runs beyond one claim batch of 10,000, each once, with the next batch sent while the last is read', async () => {
    expect(CLAIM_BATCH).to.equal(10_000);
    await bulkInsertSchedulers(10_001, '* * * * *');
    await sql(
      `INSERT INTO producer_state (name, last_slot)
       VALUES ('ticks', '2026-11-21T10:00:00Z')`,
    );
    const p = await producer({cronCatchUpMinutes: 1});
    // A catch-up of two minutes: each minute in two batches.
    const report = await p.producer.tick(at('2026-11-21T10:02:05Z'));
    expect(report).to.containDeep({
      slots: 2,
      due: 20_002,
      claimed: 20_002,
      published: 20_002,
    });
    const [counts] = await sql<{
      runs: number;
      distinct_runs: number;
      published: number;
    }>(
      `SELECT count(*)::int AS runs,
              count(DISTINCT (scheduler_id, execution_key))::int AS distinct_runs,
              count(*) FILTER (WHERE status = 'published')::int AS published
         FROM scheduler_execution`,
    );
    expect(counts).to.deepEqual({
      runs: 20_002,
      distinct_runs: 20_002,
      published: 20_002,
    });
  });

  it('claims in the batch size it is given (5,000 behind a transaction pooler): every run once, none twice', async () => {
    expect(claimBatchSize('transaction')).to.equal(CLAIM_BATCH_UNDER_POOLER);
    expect(claimBatchSize('session')).to.equal(CLAIM_BATCH);
    await bulkInsertSchedulers(7, '* * * * *');
    const p = await producer({cronCatchUpMinutes: 0, claimBatchSize: 3});
    const report = await p.producer.tick(at('2026-11-21T10:00:05Z'));
    expect(report).to.containDeep({due: 7, claimed: 7, published: 7});
    const messages = bodies(await drainQueue(TASK_QUEUE));
    expect(new Set(messages.map(m => m.scheduler_id)).size).to.equal(7);
    expect(messages).to.have.length(7);
    // Claimed again (another producer's tick): every run is already taken.
    const slot = at('2026-11-21T10:00:00Z');
    const ids = (await executionRows()).map(r => r.scheduler_id as number);
    const again = await claimRuns(
      p.pool,
      ids.map(schedulerId => ({schedulerId, slot})),
      'p2',
      3,
    );
    expect(again).to.deepEqual([]);
  });

  it('claims in scheduler id order whatever order the runs come in, so racing producers lock in one order (review: a deadlock)', async () => {
    await bulkInsertSchedulers(50, '* * * * *');
    const p = await producer({cronCatchUpMinutes: 0});
    const slot = at('2026-11-21T10:00:00Z');
    const ids = (await sql<{id: number}>(`SELECT id FROM scheduler`)).map(
      r => r.id,
    );
    // Reversed, then every other one: an order no sort could keep by chance.
    const shuffled = [...ids].reverse();
    shuffled.push(...shuffled.splice(0, 25));
    await claimRuns(
      p.pool,
      shuffled.map(schedulerId => ({schedulerId, slot})),
      'p1',
    );
    const written = await sql<{scheduler_id: number}>(
      `SELECT scheduler_id FROM scheduler_execution ORDER BY id`,
    );
    const order = written.map(r => r.scheduler_id);
    expect(order).to.deepEqual([...order].sort((a, b) => a - b));
    expect(order).to.have.length(50);
  });

  it('refuses a claim batch size that is no positive integer before writing anything', async () => {
    const [id] = await insertSchedulers([
      {schedule: '* * * * *', worker_id: 2, report_id: null},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    const runs = [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}];
    for (const size of [0, -1, 1.5, Number.NaN]) {
      await expect(claimRuns(p.pool, runs, 'p1', size)).to.be.rejectedWith(
        RangeError,
      );
    }
    expect(await executionRows()).to.deepEqual([]);
  });

  it('takes over the slot of a peer whose lease expired unfinished (the peer died mid-tick)', async () => {
    await bulkInsertSchedulers(5, '* * * * *');
    await sql(
      `INSERT INTO producer_slot_lease (slot, holder, taken_at)
       VALUES ('2026-11-21T10:00:00Z', 'dead-peer', now() - interval '20 seconds')`,
    );
    const p = await producer({cronCatchUpMinutes: 0, cronSlotLeaseMs: 15_000});
    const report = await p.producer.tick(at('2026-11-21T10:00:02Z'));
    expect(report).to.containDeep({
      slots: 1,
      slots_taken_over: 1,
      slots_by_peers: 0,
      claimed: 5,
      published: 5,
    });
    expect(
      p.logs.find('Slot lease expired unfinished: taking it over'),
    ).to.have.length(1);
    const rows = await sql<{holder: string; done: boolean}>(
      `SELECT holder, done_at IS NOT NULL AS done FROM producer_slot_lease`,
    );
    expect(rows).to.eql([{holder: `p1-${process.pid}`, done: true}]);
  });

  it('waits for a live peer to finish its slot and then evaluates nothing itself', async () => {
    await bulkInsertSchedulers(5, '* * * * *');
    await sql(
      `INSERT INTO producer_slot_lease (slot, holder) VALUES ('2026-11-21T10:00:00Z', 'live-peer')`,
    );
    const p = await producer({cronCatchUpMinutes: 0, cronSlotLeaseMs: 15_000});
    let finished = false;
    const ticking = p.producer.tick(at('2026-11-21T10:00:02Z')).then(report => {
      finished = true;
      return report;
    });
    await new Promise(resolve => setTimeout(resolve, 600));
    expect(finished).to.be.false();
    await sql(`UPDATE producer_slot_lease SET done_at = now()`);
    const report = await ticking;
    expect(report).to.containDeep({
      slots: 0,
      slots_by_peers: 1,
      slots_taken_over: 0,
      claimed: 0,
    });
    expect(await executionRows()).to.have.length(0);
    // The fleet's progress moved on: a restart does not re-plan this slot.
    const rows = await sql<{last_slot: Date}>(
      `SELECT last_slot FROM producer_state WHERE name = 'ticks'`,
    );
    expect(rows[0].last_slot.toISOString()).to.equal(
      '2026-11-21T10:00:00.000Z',
    );
  });

  it("stops waiting for a live peer's slot at shutdown, without moving the fleet's progress on", async () => {
    await bulkInsertSchedulers(2, '* * * * *');
    await sql(
      `INSERT INTO producer_slot_lease (slot, holder) VALUES ('2026-11-21T10:00:00Z', 'live-peer')`,
    );
    const p = await producer({cronCatchUpMinutes: 0, cronSlotLeaseMs: 60_000});
    const ticking = p.producer.tick(at('2026-11-21T10:00:02Z'));
    await new Promise(resolve => setTimeout(resolve, 600));
    const stoppedAt = Date.now();
    p.producer.stop();
    const report = await ticking;
    // One lease poll at most, not the peer's 60 s lease.
    expect(Date.now() - stoppedAt).to.be.below(5_000);
    expect(report).to.containDeep({claimed: 0, slots_by_peers: 0});
    expect(await executionRows()).to.have.length(0);
    expect(
      await sql(`SELECT last_slot FROM producer_state WHERE name = 'ticks'`),
    ).to.have.length(0);
  });

  it('takes its own unfinished lease again at once (a tick that failed midway is retried)', async () => {
    await bulkInsertSchedulers(3, '* * * * *');
    await sql(
      `INSERT INTO producer_slot_lease (slot, holder) VALUES ('2026-11-21T10:00:00Z', $1)`,
      [`p1-${process.pid}`],
    );
    const p = await producer({cronCatchUpMinutes: 0, cronSlotLeaseMs: 15_000});
    const report = await p.producer.tick(at('2026-11-21T10:00:02Z'));
    expect(report).to.containDeep({slots: 1, slots_taken_over: 0, claimed: 3});
  });

  it('fires every minute a late tick missed', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    const p = await producer({cronCatchUpMinutes: 5});
    await p.producer.tick(at('2026-11-21T10:00:05Z'));
    await drainQueue(TASK_QUEUE);
    const report = await p.producer.tick(at('2026-11-21T10:03:01Z'));
    expect(report).to.containDeep({slots: 3, claimed: 3, published: 3});
    const keys = (await executionRows())
      .filter(r => r.scheduler_id === id)
      .map(r => r.execution_key);
    expect(keys.slice(-4)).to.deepEqual([
      'cron-2026-11-21-10-00',
      'cron-2026-11-21-10-01',
      'cron-2026-11-21-10-02',
      'cron-2026-11-21-10-03',
    ]);
  });

  it('after downtime fires only the catch-up window and logs what it skipped, per scheduler', async () => {
    const [everyMinute, hourly] = await insertSchedulers([
      {schedule: '* * * * *'},
      {schedule: '15 * * * *'},
    ]);
    const first = await producer({cronCatchUpMinutes: 5}, 'before');
    await first.producer.tick(at('2026-11-21T10:00:01Z'));
    const restarted = await producer({cronCatchUpMinutes: 5}, 'after');
    const report = await restarted.producer.tick(at('2026-11-21T10:30:01Z'));
    expect(report.slots).to.equal(6);
    const skipped = restarted.logs.find(
      'Missed runs not fired (older than the catch-up window)',
    );
    const perScheduler = new Map(
      skipped.map(r => [r.scheduler_id, r.skipped_runs]),
    );
    expect(perScheduler.get(everyMinute)).to.equal(24);
    expect(perScheduler.get(hourly)).to.equal(1);
    expect(skipped[0]).to.containDeep({
      level: 'warn',
      from: '2026-11-21T10:01:00.000Z',
      to: '2026-11-21T10:24:00.000Z',
    });
  });

  it('republishes a claim whose producer died between claim and publish (sweeper)', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    const p = await producer({cronCatchUpMinutes: 5, cronSweepAfterMs: 30_000});
    // The dead producer claimed 10:00 and never published it.
    await claimRuns(
      p.pool,
      [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}],
      'dead-1',
    );
    await withClient(TEST_DATABASE_URL, c =>
      c.query(
        `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', '2026-11-21T10:00:00Z')`,
      ),
    );

    const early = await p.producer.tick(at('2026-11-21T10:00:20Z'));
    expect(early.swept).to.equal(0);
    await ageClaims(31);
    const later = await p.producer.tick(at('2026-11-21T10:01:05Z'));
    expect(later.swept).to.equal(1);
    // The metrics say the same: one republished, its lag under `sweep`.
    const value = async (
      name: string,
      labels: Record<string, string>,
      series = name,
    ) =>
      (await p.metrics.registry.getSingleMetric(name)!.get()).values.find(
        v =>
          ((v as {metricName?: string}).metricName ?? name) === series &&
          JSON.stringify(v.labels) === JSON.stringify(labels),
      )?.value;
    const lagCount = (trigger: string) =>
      value(
        'task_scheduler_dispatch_lag_seconds',
        {trigger},
        'task_scheduler_dispatch_lag_seconds_count',
      );
    expect(
      await value('task_scheduler_sweeps_total', {result: 'republished'}),
    ).to.equal(1);
    expect(await lagCount('sweep')).to.equal(1);
    expect(await lagCount('cron')).to.equal(1);
    const messages = bodies(await drainQueue(TASK_QUEUE));
    expect(messages.map(m => m.scheduler_id)).to.deepEqual([id, id]);
    const rows = await executionRows();
    expect(rows.every(r => r.published_at !== null)).to.be.true();
    expect((await p.producer.tick(at('2026-11-21T10:02:05Z'))).swept).to.equal(
      0,
    );
  });

  it("sweeps the claims a dead peer left while it still waits for that peer's slot lease", async () => {
    const [id] = await insertSchedulers([{schedule: '0 0 1 1 *'}]);
    const p = await producer({
      cronCatchUpMinutes: 5,
      cronSweepAfterMs: 30_000,
      cronSlotLeaseMs: 15_000,
    });
    // The dead peer claimed a run of 09:58, never published it, and still
    // holds the lease of 10:00 (not yet expired).
    await claimRuns(
      p.pool,
      [{schedulerId: id, slot: at('2026-11-21T09:58:00Z')}],
      'dead-1',
    );
    await ageClaims(31);
    await sql(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', '2026-11-21T09:59:00Z')`,
    );
    await sql(
      `INSERT INTO producer_slot_lease (slot, holder) VALUES ('2026-11-21T10:00:00Z', 'dead-1')`,
    );
    let finished = false;
    const ticking = p.producer.tick(at('2026-11-21T10:00:02Z')).then(report => {
      finished = true;
      return report;
    });
    const deadline = Date.now() + 5_000;
    let published: Array<{published_at: Date | null}> = [];
    while (Date.now() < deadline) {
      published = await sql<{published_at: Date | null}>(
        `SELECT published_at FROM scheduler_execution WHERE published_at IS NOT NULL`,
      );
      if (published.length > 0) break;
      await new Promise(resolve => setTimeout(resolve, 100));
    }
    expect(published).to.have.length(1);
    expect(finished).to.be.false();
    await sql(`UPDATE producer_slot_lease SET done_at = now()`);
    expect(await ticking).to.containDeep({swept: 1, slots_by_peers: 1});
    expect(bodies(await drainQueue(TASK_QUEUE))).to.have.length(1);
  });

  it('loses nothing when the broker connection drops: claims wait and are published after reconnect', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    await sql(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', '2026-11-21T09:59:00Z')`,
    );
    const p = await producer({cronCatchUpMinutes: 5, cronSweepAfterMs: 30_000});
    const reconnected = new Promise(resolve =>
      p.connection.once('connected', resolve),
    );
    // The broker stays unreachable for the whole tick (a reconnect within
    // the tick's database work would otherwise publish it).
    await refuseVhostAccess();
    let during: TickReport;
    try {
      await closeVhostConnections();
      during = await p.producer.tick(at('2026-11-21T10:00:02Z'));
    } finally {
      await allowVhostAccess();
    }
    expect(during).to.containDeep({claimed: 1, published: 0});
    // The publish that could not happen is counted as failed.
    const publishes = async (result: string) =>
      (
        await p.metrics.registry
          .getSingleMetric('task_scheduler_publishes_total')!
          .get()
      ).values.find(v => v.labels.result === result)?.value;
    expect(await publishes('failed')).to.equal(1);
    expect(await publishes('confirmed')).to.equal(0);
    await reconnected;
    await ageClaims(31);
    const after = await p.producer.tick(at('2026-11-21T10:01:02Z'));
    expect(after).to.containDeep({claimed: 1, published: 1, swept: 1});
    expect(await publishes('confirmed')).to.equal(2);
    const keys = bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id);
    expect(keys).to.deepEqual([id, id]);
    expect((await executionRows()).map(r => r.status)).to.deepEqual([
      'published',
      'published',
    ]);
  });

  it('skips an invalid stored cron with one warn log and keeps publishing the others', async () => {
    const [bad, good] = await insertSchedulers([
      {schedule: '61 * * * *'},
      {schedule: '* * * * *'},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    const report = await p.producer.tick(at('2026-11-21T10:00:01Z'));
    await p.producer.tick(at('2026-11-21T10:01:01Z'));
    expect(report).to.containDeep({invalid: 1, published: 1});
    const warnings = p.logs.find('Scheduler skipped: unreadable schedule');
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.containDeep({
      level: 'warn',
      scheduler_id: bad,
      field: 'schedule',
      schedule: '61 * * * *',
    });
    expect(
      bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id),
    ).to.deepEqual([good, good]);
  });

  it('never publishes inactive or stay-alive schedulers, and sees a disable at the next tick', async () => {
    const [active] = await insertSchedulers([
      {schedule: '* * * * *'},
      {schedule: '* * * * *', status: false},
      {schedule: null, stay_alive: true, worker_id: 1, report_id: null},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    await p.producer.tick(at('2026-11-21T10:00:01Z'));
    await withClient(TEST_DATABASE_URL, c =>
      c.query('UPDATE scheduler SET status = false WHERE id = $1', [active]),
    );
    const second = await p.producer.tick(at('2026-11-21T10:01:01Z'));
    expect(second.due).to.equal(0);
    expect(
      bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id),
    ).to.deepEqual([active]);
  });

  it('never claims a stay-alive scheduler, even when one is handed to the claimer', async () => {
    // A stay-alive scheduler has no schedule, so it is never due; the claimer
    // refuses it anyway, for a run evaluated just before it became stay-alive.
    const [stayAlive, recurring] = await insertSchedulers([
      {schedule: null, stay_alive: true, worker_id: 1, report_id: null},
      {schedule: '* * * * *', worker_id: 2, report_id: null},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    const slot = at('2026-11-21T10:00:00Z');
    const claims = await claimRuns(
      p.pool,
      [
        {schedulerId: stayAlive, slot},
        {schedulerId: recurring, slot},
      ],
      'p1',
    );
    expect(claims.map(c => c.scheduler_id)).to.deepEqual([recurring]);
    expect((await executionRows()).map(r => r.scheduler_id)).to.deepEqual([
      recurring,
    ]);
  });

  it('does not republish a stale claim of a scheduler that has become stay-alive since (sweeper)', async () => {
    const [id] = await insertSchedulers([
      {schedule: '* * * * *', worker_id: 2, report_id: null},
    ]);
    const p = await producer({cronCatchUpMinutes: 0, cronSweepAfterMs: 30_000});
    await claimRuns(
      p.pool,
      [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}],
      'dead-1',
    );
    await withClient(TEST_DATABASE_URL, c =>
      c.query(
        `UPDATE scheduler SET schedule = NULL, stay_alive = true WHERE id = $1;`,
        [id],
      ),
    );
    const report = await p.producer.tick(at('2026-11-21T10:01:05Z'));
    expect(report).to.containDeep({due: 0, swept: 0, published: 0});
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('evaluates a scheduler in its own time zone', async () => {
    const [berlin] = await insertSchedulers([
      {schedule: '0 9 * * *', timezone: 'Europe/Berlin'},
    ]);
    const p = await producer({cronCatchUpMinutes: 0});
    await p.producer.tick(at('2026-11-21T09:00:01Z'));
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    await p.producer.tick(at('2026-11-22T08:00:01Z'));
    expect(
      bodies(await drainQueue(TASK_QUEUE)).map(m => m.scheduler_id),
    ).to.deepEqual([berlin]);
  });

  it('logs one info line per tick with the counts', async () => {
    await insertSchedulers([{schedule: '* * * * *'}]);
    const p = await producer({cronCatchUpMinutes: 0});
    await p.producer.tick(at('2026-11-21T10:00:01Z'));
    const [line] = p.logs.find('Tick completed');
    expect(line).to.containDeep({
      level: 'info',
      slots: 1,
      due: 1,
      claimed: 1,
      already_claimed: 0,
      published: 1,
    });
    expect(line.duration_ms).to.be.a.Number();
  });

  it('refuses to start on a broker whose queues have other arguments', async () => {
    const settings = retrySettings(loadConfig(TEST_RETRY_ENV));
    await assertTopology(() => openTestChannel(), brokerTopology(settings));
    // A retry delay change no longer clashes (issue 14): the task queue's arguments still do.
    const changed = brokerTopology(settings);
    changed.queues[0].options.arguments = {
      ...changed.queues[0].options.arguments,
      'x-dead-letter-routing-key': 'elsewhere',
    };
    let failure: unknown;
    try {
      await assertTopology(() => openTestChannel(), changed);
    } catch (error) {
      failure = error;
    }
    expect(failure).to.be.instanceOf(TopologyMismatchError);
    expect((failure as Error).message).to.match(/queue cron_scheduler\b/);
  });
});

/** A channel whose connection closes with it (also when the broker closes it). */
async function openTestChannel(): Promise<Channel> {
  const connection = await amqp.connect(TEST_AMQP_URL);
  const channel = await connection.createChannel();
  channel.on('close', () => {
    connection.close().catch(() => undefined);
  });
  return channel;
}
