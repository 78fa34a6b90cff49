import {expect} from '@loopback/testlab';
import {givenProducer, TestProducer} from '../fixtures/test-producer';
import {sql} from '../fixtures/test-database';

/**
 * Producer.warm(), which the ticker calls WARM_UP_MS before each tick: a
 * database session idle for a minute answered its first query 40-73 ms
 * late, and the tick's first statements each waited so.
 */
describe('producer: warming up before the tick', () => {
  let given: TestProducer;
  beforeEach(async () => {
    given = await givenProducer();
  });
  afterEach(() => given.stop());

  it('runs one trivial query on each idle pooled session, on its own backend', async () => {
    // Three sessions at once, then idle in the pool.
    const held = await Promise.all([1, 2, 3].map(() => given.pool.connect()));
    const pids: number[] = [];
    for (const client of held) {
      const {rows} = await client.query<{pid: number}>(
        'SELECT pg_backend_pid() AS pid',
      );
      pids.push(rows[0].pid);
    }
    for (const client of held) client.release();
    expect(given.pool.idleCount).to.equal(3);

    await given.producer.warm();

    const seen = await sql<{pid: number; query: string}>(
      `SELECT pid, query FROM pg_stat_activity WHERE pid = ANY($1::int[])`,
      [pids],
    );
    expect(seen.map(row => row.query)).to.deepEqual([
      'SELECT 1',
      'SELECT 1',
      'SELECT 1',
    ]);
    expect(given.pool.idleCount).to.equal(3);
  });
});
