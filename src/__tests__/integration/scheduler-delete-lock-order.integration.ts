import {expect} from '@loopback/testlab';
import {Client} from 'pg';
import {
  lockHolder,
  lockRun,
  untilSomeoneWaitsOnALock,
} from '../fixtures/lock-waits';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

/**
 * A scheduler's delete cascades to its runs. The producer marking runs
 * published and a consumer starting a batch lock runs in id order; the
 * cascade alone visits them in the order of the table or of an index.
 */
describe('deleting a scheduler while its runs are marked (lock order)', () => {
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
  });

  it('locks its runs in id order, so a marking in id order never deadlocks with it', async () => {
    const [{id: schedulerId}] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
    // A backfilled run (an earlier minute's key, a higher id); then the
    // newer run moves on (published): its new row version lies behind the
    // backfilled one in the table, so the cascade meets the backfilled first.
    const [newer, backfilled] = (
      await sql<{id: string}>(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status)
         VALUES ($1, 'cron-2026-11-25-17-00', 'test', 'claimed'),
                ($1, 'cron-2026-11-01-09-00', 'test', 'claimed')
         RETURNING id`,
        [schedulerId],
      )
    ).map(row => Number(row.id));
    await sql(
      `UPDATE scheduler_execution SET status = 'published', published_at = now() WHERE id = $1`,
      [newer],
    );
    const marker = await lockHolder();
    const deleter = new Client({connectionString: TEST_DATABASE_URL});
    await deleter.connect();
    try {
      await marker.query('BEGIN');
      await lockRun(marker, newer); // in id order: the lower id first
      const deleting = deleter.query('DELETE FROM scheduler WHERE id = $1', [
        schedulerId,
      ]);
      deleting.catch(() => undefined); // awaited below
      await untilSomeoneWaitsOnALock();
      // Free only if the delete waits on the lower id holding nothing else.
      await marker.query(
        'SELECT id FROM scheduler_execution WHERE id = $1 FOR UPDATE NOWAIT',
        [backfilled],
      );
      await marker.query('COMMIT');
      await deleting;
    } finally {
      await marker.end();
      await deleter.end();
    }
    expect(await sql('SELECT id FROM scheduler_execution')).to.have.length(0);
    expect(await sql('SELECT id FROM scheduler')).to.have.length(0);
  });
});
