import {expect} from '@loopback/testlab';
import {asUser, AuthedClient, givenUser} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

const SCHEDULERS = 150;
const PAGE = 10;

describe('paging a list ordered by a column with equal values', () => {
  let given: TestApp;
  let viewer: AuthedClient;
  let ids: number[];
  before(async () => {
    await truncateAll();
    await givenCatalog();
    given = await givenRunningApp();
    viewer = asUser(given.client, await givenUser(given.app, 'viewer'));
    // Every scheduler has the same status and report: the order alone
    // cannot tell them apart.
    const rows = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, report_id)
       SELECT 'same ' || n, '0 2 * * *', 1 FROM generate_series(1, $1) n
       RETURNING id`,
      [SCHEDULERS],
    );
    ids = rows.map(row => Number(row.id)).sort((a, b) => a - b);
    // Shuffle the heap order so that the table's order is not the ids'.
    await sql(
      `UPDATE scheduler SET description = description || '.' WHERE id % 3 = 0`,
    );
  });
  after(() => given.app.stop());

  async function page(order: unknown, skip: number): Promise<number[]> {
    const res = await viewer
      .get('/api/schedulers')
      .query({filter: JSON.stringify({order, limit: PAGE, skip})})
      .expect(200);
    return res.body.map((s: {id: number}) => s.id);
  }

  for (const order of ['status DESC', ['report_id ASC', 'status ASC']]) {
    it(`shows every row exactly once across pages, ties in id order (order ${JSON.stringify(order)})`, async () => {
      const seen: number[] = [];
      for (let skip = 0; skip < SCHEDULERS; skip += PAGE)
        seen.push(...(await page(order, skip)));
      expect(seen).to.deepEqual(ids);
    });
  }

  it('keeps an order that names the id as given', async () => {
    expect(await page(['status ASC', 'id DESC'], 0)).to.deepEqual(
      [...ids].reverse().slice(0, PAGE),
    );
  });
});
