import {expect} from '@loopback/testlab';
import {claimRuns} from '../../producer/execution-claimer';
import {TASK_QUEUE} from '../../queue/topology';
import {lockHolder, lockRun} from '../fixtures/lock-waits';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  givenCatalog,
  sql,
  truncateAll,
  TEST_DATABASE_URL,
  withClient,
} from '../fixtures/test-database';
import {
  ageClaims,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

const at = (iso: string) => new Date(iso);

/**
 * Seen while building the chaos suite: a producer whose database link broke (or that
 * died) after the broker confirmed a publish but before it recorded
 * `published_at` left a run that the consumer then executed to the end. The
 * sweeper took any run without `published_at` for unpublished and sent it
 * again, so a failed run ran through all its attempts a second time, and a
 * run still running could run twice at once.
 */
describe('sweeper and runs the consumer already took', () => {
  let p: TestProducer;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await withClient(TEST_DATABASE_URL, c =>
      c.query('TRUNCATE producer_state'),
    );
    await resetBroker();
    p = await givenProducer({cronCatchUpMinutes: 0, cronSweepAfterMs: 30_000});
  });
  afterEach(() => p.stop());

  for (const status of ['running', 'retrying', 'succeeded', 'failed']) {
    it(`does not republish a "${status}" run whose publish was never recorded`, async () => {
      const [id] = await insertSchedulers([{schedule: '0 0 1 1 *'}]);
      const [claim] = await claimRuns(
        p.pool,
        [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}],
        'lost-its-database-link',
      );
      // The consumer got the message and moved the run on.
      await sql(
        `UPDATE scheduler_execution SET status = $2, attempts = 1 WHERE id = $1`,
        [claim.execution_id, status],
      );

      const report = await p.producer.tick(at('2026-11-21T10:05:00Z'));

      expect(report.swept).to.equal(0);
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
      const [row] = await sql<{status: string}>(
        `SELECT status FROM scheduler_execution WHERE id = $1`,
        [claim.execution_id],
      );
      expect(row.status).to.equal(status);
    });
  }

  it('leaves a one-time run whose scheduler a delete holds to the next sweep, instead of deadlocking with the delete', async () => {
    await p.stop();
    p = await givenProducer({cronCatchUpMinutes: 5, cronSweepAfterMs: 30_000});
    const slot = at('2026-11-21T10:00:00Z');
    const [id] = await insertSchedulers([{date_time: slot.toISOString()}]);
    const [claim] = await claimRuns(
      p.pool,
      [{schedulerId: id, slot}],
      'died-before-publishing',
    );
    await ageClaims(31);
    // A delete holds the scheduler row, then (its trigger) wants the runs.
    const deleter = await lockHolder();
    let ticking: Promise<{swept: number}> | undefined;
    try {
      await deleter.query('BEGIN');
      await deleter.query('SELECT id FROM scheduler WHERE id = $1 FOR UPDATE', [
        id,
      ]);
      ticking = p.producer.tick(at('2026-11-21T10:05:00Z'));
      const first = await Promise.race([
        ticking,
        new Promise<'still waiting'>(resolve =>
          setTimeout(() => resolve('still waiting'), 3000),
        ),
      ]);
      expect(first).to.containDeep({swept: 0});
      // Free only if the sweep holds nothing of the run.
      await lockRun(deleter, claim.execution_id);
    } finally {
      await deleter.query('ROLLBACK');
      await deleter.end();
      await ticking?.catch(() => undefined);
    }
    // The next sweep, the delete gone: sent, and the scheduler switched off.
    const again = await p.producer.tick(at('2026-11-21T10:05:00Z'));
    expect(again.swept).to.equal(1);
    const [scheduler] = await sql<{status: boolean}>(
      `SELECT status FROM scheduler WHERE id = $1`,
      [id],
    );
    expect(scheduler.status).to.be.false();
  });

  it('still republishes a run nobody took (status claimed), within the catch-up window', async () => {
    await p.stop();
    p = await givenProducer({cronCatchUpMinutes: 5, cronSweepAfterMs: 30_000});
    const [id] = await insertSchedulers([{schedule: '0 0 1 1 *'}]);
    await claimRuns(
      p.pool,
      [{schedulerId: id, slot: at('2026-11-21T10:00:00Z')}],
      'died-before-publishing',
    );
    await ageClaims(31);
    const report = await p.producer.tick(at('2026-11-21T10:05:00Z'));
    expect(report.swept).to.equal(1);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
  });

  it('sends a backfilled claim however old its slot, while a scheduled one that old is skipped', async () => {
    const [id] = await insertSchedulers([{schedule: '0 * * * *'}]);
    // Both lost their confirm; both slots lie far before the catch-up window.
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, container_id, trigger)
       VALUES ($1, 'cron-2026-11-01-06-00', '2026-11-01T06:00:00Z', 'api', 'backfill'),
              ($1, 'cron-2026-11-01-07-00', '2026-11-01T07:00:00Z', 'p1', 'schedule')`,
      [id],
    );
    await ageClaims(31);
    const report = await p.producer.tick(at('2026-11-21T10:05:00Z'));
    expect(report).to.containDeep({swept: 1, skipped_stale: 1});
    const rows = await sql<{trigger: string; status: string}>(
      `SELECT trigger, status FROM scheduler_execution ORDER BY slot`,
    );
    expect(rows).to.deepEqual([
      {trigger: 'backfill', status: 'published'},
      {trigger: 'schedule', status: 'skipped'},
    ]);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
  });
});
