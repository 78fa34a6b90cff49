import {expect} from '@loopback/testlab';
import {OVERLAP_SKIP_REASON} from '../../producer/execution-claimer';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  at,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

/** Issue 15, item 4: overlap_policy skip. */
describe('producer: overlap policy', () => {
  let p: TestProducer;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql('TRUNCATE producer_state');
    await sql(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', '2026-11-21T10:00:00Z')`,
    );
    await resetBroker();
    p = await givenProducer({cronCatchUpMinutes: 5});
  });
  afterEach(() => p.stop());

  const runs = (schedulerId: number) =>
    sql<{execution_key: string; status: string; status_reason: string | null}>(
      `SELECT execution_key, status, status_reason FROM scheduler_execution
        WHERE scheduler_id = $1 ORDER BY slot`,
      [schedulerId],
    );

  it('records the next slot of a skip scheduler as skipped while its run is still going, and fires again once it ended', async () => {
    const [skip, allow] = await insertSchedulers([{}, {}]);
    await sql(`UPDATE scheduler SET overlap_policy = 'skip' WHERE id = $1`, [
      skip,
    ]);
    await p.producer.tick(at('2026-11-21T10:01:00.100Z'));
    // Both published; no consumer finishes them, so both are still going.
    const second = await p.producer.tick(at('2026-11-21T10:02:00.100Z'));
    expect(second).to.containDeep({claimed: 1, skipped_overlap: 1});
    expect(await runs(skip)).to.deepEqual([
      {
        execution_key: 'cron-2026-11-21-10-01',
        status: 'published',
        status_reason: null,
      },
      {
        execution_key: 'cron-2026-11-21-10-02',
        status: 'skipped',
        status_reason: OVERLAP_SKIP_REASON,
      },
    ]);
    // allow: the spec's behaviour, overlapping runs are sent.
    expect((await runs(allow)).map(r => r.status)).to.deepEqual([
      'published',
      'published',
    ]);
    const sent = await drainQueue(TASK_QUEUE);
    expect(
      sent.filter(m => JSON.parse(m.content.toString()).scheduler_id === skip),
    ).to.have.length(1);
    // The run ends: the next slot fires.
    await sql(
      `UPDATE scheduler_execution SET status = 'succeeded'
        WHERE scheduler_id = $1 AND status = 'published'`,
      [skip],
    );
    const third = await p.producer.tick(at('2026-11-21T10:03:00.100Z'));
    expect(third).to.containDeep({skipped_overlap: 0});
    expect((await runs(skip)).map(r => r.status)).to.deepEqual([
      'succeeded',
      'skipped',
      'published',
    ]);
  });

  it('claims every missed minute of a catch-up tick: its runs are not held back by each other', async () => {
    const [skip, other] = await insertSchedulers([{}, {}]);
    await sql(`UPDATE scheduler SET overlap_policy = 'skip' WHERE id = $1`, [
      skip,
    ]);
    // Three minutes missed (10:01, 10:02, 10:03), claimed by one tick.
    const tick = await p.producer.tick(at('2026-11-21T10:03:00.100Z'));
    expect(tick).to.containDeep({claimed: 6, skipped_overlap: 0});
    expect(await runs(skip)).to.deepEqual(
      ['01', '02', '03'].map(minute => ({
        execution_key: `cron-2026-11-21-10-${minute}`,
        status: 'published',
        status_reason: null,
      })),
    );
    expect((await runs(other)).map(r => r.status)).to.deepEqual([
      'published',
      'published',
      'published',
    ]);
    // The next tick sees them going: its run is skipped.
    const next = await p.producer.tick(at('2026-11-21T10:04:00.100Z'));
    expect(next).to.containDeep({claimed: 1, skipped_overlap: 1});
  });
});
