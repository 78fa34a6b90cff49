import {expect} from '@loopback/testlab';
import {resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  at,
  givenProducer,
  insertSchedulers,
  TestProducer,
} from '../fixtures/test-producer';

/** Issue 26, item 4: runs missed beyond the catch-up window. */
describe('missed-runs notice', () => {
  const producers: TestProducer[] = [];

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql('TRUNCATE producer_state');
    await sql(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', '2026-11-24T10:00:00Z')`,
    );
  });
  afterEach(async () => {
    for (const p of producers.splice(0)) await p.stop();
  });

  it('gives one notice per scheduler for a ten-minute outage, with the count and the first and last missed slot, however many producers saw it', async () => {
    const [{id: owner}] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('owner@example.com', 'Owner', 'x', 'operator') RETURNING id`,
    );
    const [every, silent] = await insertSchedulers([
      {schedule: '* * * * *'},
      {schedule: '* * * * *'},
    ]);
    await sql(`UPDATE scheduler SET user_id = $1`, [owner]);
    await sql(
      `UPDATE scheduler SET notify = notify || '{"on_failure": false}' WHERE id = $1`,
      [silent],
    );
    // Down from 10:00 to 10:10 with a catch-up window of 5 minutes: the
    // runs of 10:01 to 10:04 are missed. Two producers restart together.
    for (const name of ['a', 'b']) {
      producers.push(await givenProducer({cronCatchUpMinutes: 5}, name));
    }
    await Promise.all(
      producers.map(p => p.producer.tick(at('2026-11-24T10:10:00.100Z'))),
    );
    const notices = await sql<{payload: Record<string, unknown>}>(
      `SELECT payload FROM notification WHERE user_id = $1`,
      [owner],
    );
    expect(notices.map(n => n.payload)).to.deepEqual([
      {
        kind: 'missed_runs',
        scheduler_id: every,
        missed: 4,
        first_slot: '2026-11-24T10:01:00+00:00',
        last_slot: '2026-11-24T10:04:00+00:00',
      },
    ]);
    // The next tick is on time: nothing more.
    await producers[0].producer.tick(at('2026-11-24T10:11:00.100Z'));
    expect(
      await sql(`SELECT 1 FROM notification WHERE user_id = $1`, [owner]),
    ).to.have.length(1);
  });
});
