import {expect} from '@loopback/testlab';
import {claimRuns} from '../../producer/execution-claimer';
import {TASK_QUEUE} from '../../queue/topology';
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
