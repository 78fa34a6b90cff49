import {expect} from '@loopback/testlab';
import {Pool} from 'pg';
import {markPublished} from '../../database/mark-published';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

describe('markPublished', () => {
  let pool: Pool;
  before(() => {
    pool = new Pool({connectionString: TEST_DATABASE_URL, max: 1});
  });
  after(() => pool.end());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
  });

  it('marks claimed runs published, and leaves runs a consumer already took alone', async () => {
    const [{id: schedulerId}] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
    const rows = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status)
       SELECT $1, 'k' || n, 'test', s
         FROM unnest(ARRAY['claimed', 'running', 'succeeded']) WITH ORDINALITY AS t(s, n)
       RETURNING id`,
      [schedulerId],
    );
    const at = new Date('2026-11-21T10:00:00.123Z');
    await markPublished(pool, new Map(rows.map(row => [Number(row.id), at])));
    const after = await sql<{status: string; published_at: Date}>(
      `SELECT status, published_at FROM scheduler_execution ORDER BY id`,
    );
    expect(after).to.deepEqual([
      {status: 'published', published_at: at},
      {status: 'running', published_at: at},
      {status: 'succeeded', published_at: at},
    ]);
  });
});
