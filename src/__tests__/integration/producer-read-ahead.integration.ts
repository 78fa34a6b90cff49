import {expect, sinon} from '@loopback/testlab';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  givenCatalog,
  sql,
  truncateAll,
  withClient,
  TEST_DATABASE_URL,
} from '../fixtures/test-database';
import {
  at,
  bodies,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

/**
 * Issue 17: the tick's candidates are read and evaluated a few seconds
 * before the boundary; at the boundary the tick reads only what changed.
 * Whatever changes in between, the tick claims what a full read would.
 */
/** Still long before the tests' clock, and not the rows' own LONG_AGO. */
const A_LITTLE_LATER = '2000-01-02T00:00:00Z';

describe('producer: reading ahead of the tick', () => {
  let p: TestProducer;
  const FIRST = at('2026-11-21T10:00:05Z');
  const NEXT_TICK = at('2026-11-21T10:01:00.010Z');

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql('TRUNCATE producer_state');
    await resetBroker();
    p = await givenProducer({cronCatchUpMinutes: 0});
  });
  afterEach(async () => {
    sinon.restore();
    await p.stop();
  });

  /** The first tick: the producer knows its last slot, and the queue is empty. */
  async function afterFirstTick() {
    await p.producer.tick(FIRST);
    await drainQueue(TASK_QUEUE);
  }

  const published = async () =>
    bodies(await drainQueue(TASK_QUEUE))
      .map(m => m.scheduler_id as number)
      .sort((a, b) => a - b);

  it('uses the early evaluation when nothing changed in between', async () => {
    const [a, b] = await insertSchedulers([
      {schedule: '* * * * *'},
      {schedule: '* * * * *'},
      {schedule: '30 6 * * *'},
    ]);
    await afterFirstTick();
    await p.producer.prepare(NEXT_TICK);
    const report = await p.producer.tick(NEXT_TICK);
    expect(report).to.containDeep({
      read_ahead: 'reused',
      due: 2,
      claimed: 2,
      published: 2,
    });
    expect(await published()).to.deepEqual([a, b]);
    const [line] = p.logs.find('Tick completed').slice(-1);
    expect(line).to.containDeep({read_ahead: 'reused'});
  });

  it('a warm-up between the read-ahead and the tick changes nothing the tick decides', async () => {
    const [a, b] = await insertSchedulers([
      {schedule: '* * * * *'},
      {schedule: '* * * * *'},
    ]);
    await afterFirstTick();
    await p.producer.prepare(NEXT_TICK);
    await p.producer.warm();
    expect(await p.producer.tick(NEXT_TICK)).to.containDeep({
      read_ahead: 'reused',
      claimed: 2,
    });
    expect(await published()).to.deepEqual([a, b]);
    // A change after the warm-up is still the tick's to see.
    const THIRD_TICK = at('2026-11-21T10:02:00.010Z');
    await p.producer.prepare(THIRD_TICK);
    await p.producer.warm();
    await sql('UPDATE scheduler SET status = false WHERE id = $1', [a]);
    expect(await p.producer.tick(THIRD_TICK)).to.containDeep({
      read_ahead: 'refreshed',
      claimed: 1,
    });
    expect(await published()).to.deepEqual([b]);
  });

  it('sees every scheduler added, changed, switched off or deleted in between', async () => {
    const [switchedOff, rescheduled, unchanged, deleted] =
      await insertSchedulers([
        {schedule: '* * * * *'},
        {schedule: '30 6 * * *'},
        {schedule: '* * * * *'},
        {schedule: '* * * * *'},
      ]);
    await afterFirstTick();
    await p.producer.prepare(NEXT_TICK);
    const [added] = await insertSchedulers([{schedule: '* * * * *'}]);
    await sql('UPDATE scheduler SET status = false WHERE id = $1', [
      switchedOff,
    ]);
    // activated_at as written (a value other than the old one, which the
    // activation trigger would replace): the tests' clock is days behind.
    await sql(
      `UPDATE scheduler SET schedule = '* * * * *', activated_at = $2
        WHERE id = $1`,
      [rescheduled, A_LITTLE_LATER],
    );
    await sql('DELETE FROM scheduler WHERE id = $1', [deleted]);
    const report = await p.producer.tick(NEXT_TICK);
    expect(report).to.containDeep({read_ahead: 'refreshed', claimed: 3});
    expect(await published()).to.deepEqual([rescheduled, unchanged, added]);
  });

  it('sees a change committed after the read-ahead by a transaction that began before it', async () => {
    // The row's updated_at is its transaction's start, before the early
    // read: only its row version tells that the read did not see it.
    const [rescheduled, switchedOff] = await insertSchedulers([
      {schedule: '30 6 * * *'},
      {schedule: '* * * * *'},
    ]);
    await afterFirstTick();
    await withClient(TEST_DATABASE_URL, async writer => {
      await writer.query('BEGIN');
      await writer.query(
        `UPDATE scheduler SET schedule = '* * * * *', activated_at = $2
          WHERE id = $1`,
        [rescheduled, A_LITTLE_LATER],
      );
      await writer.query('UPDATE scheduler SET status = false WHERE id = $1', [
        switchedOff,
      ]);
      await p.producer.prepare(NEXT_TICK);
      await writer.query('COMMIT');
    });
    const report = await p.producer.tick(NEXT_TICK);
    expect(report).to.containDeep({read_ahead: 'refreshed', claimed: 1});
    expect(await published()).to.deepEqual([rescheduled]);
  });

  it('applies a calendar edited in between', async () => {
    const [calendar] = await sql<{id: number}>(
      `INSERT INTO calendar (name, time_zone, kind, dates, times)
       VALUES ('holidays', 'UTC', 'blackout', '[]', '[]') RETURNING id`,
    );
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    await sql(`UPDATE scheduler SET calendar_ids = $2::jsonb WHERE id = $1`, [
      id,
      JSON.stringify([calendar.id]),
    ]);
    await afterFirstTick();
    await p.producer.prepare(NEXT_TICK);
    await sql(`UPDATE calendar SET dates = '["2026-11-21"]' WHERE id = $1`, [
      calendar.id,
    ]);
    const report = await p.producer.tick(NEXT_TICK);
    expect(report).to.containDeep({
      read_ahead: 'refreshed',
      claimed: 0,
      skipped_calendar: 1,
    });
    expect(await published()).to.deepEqual([]);
  });

  it('evaluates afresh when the tick comes for other slots than it read ahead for', async () => {
    const [id] = await insertSchedulers([{schedule: '*/2 * * * *'}]);
    await afterFirstTick();
    await p.producer.prepare(NEXT_TICK);
    // The tick meant for 10:01 came a minute late: with no catch-up window
    // it evaluates 10:02 alone, which the early evaluation did not cover.
    const report = await p.producer.tick(at('2026-11-21T10:02:00.010Z'));
    expect(report).to.containDeep({read_ahead: 'refreshed', claimed: 1});
    expect(await published()).to.deepEqual([id]);
    const rows = await sql<{slot: Date}>(
      'SELECT slot FROM scheduler_execution ORDER BY slot',
    );
    expect(rows.map(row => row.slot.toISOString())).to.deepEqual([
      '2026-11-21T10:00:00.000Z',
      '2026-11-21T10:02:00.000Z',
    ]);
  });

  it('reads in full after a failed read-ahead, with one warning', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    await afterFirstTick();
    const query = sinon.stub(p.pool, 'query').callThrough();
    query.onFirstCall().rejects(new Error('connection reset by peer'));
    await p.producer.prepare(NEXT_TICK);
    sinon.restore();
    expect(
      p.logs.find('Reading ahead of the tick failed: it reads in full', {
        level: 'warn',
        error: 'connection reset by peer',
      }),
    ).to.have.length(1);
    const report = await p.producer.tick(NEXT_TICK);
    expect(report).to.containDeep({read_ahead: 'none', claimed: 1});
    expect(await published()).to.deepEqual([id]);
  });

  it('sees a change to most rows (a bulk rewrite) with one full read', async () => {
    const ids = await insertSchedulers([
      {schedule: '* * * * *'},
      {schedule: '* * * * *'},
      {schedule: '30 6 * * *'},
      {schedule: '30 6 * * *'},
    ]);
    await afterFirstTick();
    await p.producer.prepare(NEXT_TICK);
    await sql(
      `UPDATE scheduler
          SET schedule = CASE WHEN schedule = '* * * * *'
                              THEN '30 6 * * *' ELSE '* * * * *' END,
              activated_at = $1`,
      [A_LITTLE_LATER],
    );
    const report = await p.producer.tick(NEXT_TICK);
    expect(report).to.containDeep({read_ahead: 'refreshed', claimed: 2});
    expect(await published()).to.deepEqual(ids.slice(2));
  });

  it('does not wait for a read-ahead still under way: the tick reads in full', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    await afterFirstTick();
    let release!: () => void;
    const held = new Promise<void>(resolve => (release = resolve));
    const query = sinon.stub(p.pool, 'query').callThrough();
    // The early read's first query waits until the tick is over (the fake
    // stands in for pool.query, which returns a promise).
    // eslint-disable-next-line @typescript-eslint/no-misused-promises
    query.onFirstCall().callsFake(async (...args: unknown[]) => {
      await held;
      query.restore();
      return (p.pool.query as (...a: unknown[]) => unknown)(...args);
    });
    const preparing = p.producer.prepare(NEXT_TICK);
    const report = await p.producer.tick(NEXT_TICK);
    release();
    await preparing;
    expect(report).to.containDeep({read_ahead: 'none', claimed: 1});
    expect(await published()).to.deepEqual([id]);
  });

  it('reads ahead only in the producer that evaluated the last minute itself, not in its peers', async () => {
    const [id] = await insertSchedulers([{schedule: '* * * * *'}]);
    const peer = await givenProducer({cronCatchUpMinutes: 0}, 'peer');
    try {
      await p.producer.tick(FIRST);
      // The fleet's last slot is 10:00 already: the peer evaluates nothing.
      const peerReport = await peer.producer.tick(FIRST);
      expect(peerReport).to.containDeep({slots: 0, claimed: 0});
      const peerQueries = sinon.spy(peer.pool, 'query');
      await peer.producer.prepare(NEXT_TICK);
      expect(peerQueries.callCount).to.equal(0);
      await p.producer.prepare(NEXT_TICK);
      // The peer's tick comes first this time: it takes the lease and
      // reads in full.
      const report = await peer.producer.tick(NEXT_TICK);
      expect(report).to.containDeep({read_ahead: 'none', claimed: 1});
      await drainQueue(TASK_QUEUE);
      // Having evaluated a minute itself, it reads the next one ahead.
      await peer.producer.prepare(at('2026-11-21T10:02:00.010Z'));
      const next = await peer.producer.tick(at('2026-11-21T10:02:00.010Z'));
      expect(next).to.containDeep({read_ahead: 'reused', claimed: 1});
      expect(await published()).to.deepEqual([id]);
    } finally {
      sinon.restore();
      await peer.stop();
    }
  });

  it('reads nothing ahead before its first tick', async () => {
    await insertSchedulers([{schedule: '* * * * *'}]);
    const query = sinon.spy(p.pool, 'query');
    await p.producer.prepare(NEXT_TICK);
    expect(query.callCount).to.equal(0);
  });
});
