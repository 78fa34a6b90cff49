import {expect} from '@loopback/testlab';
import {Client} from 'pg';
import {changedTables, DataSnapshotter} from '../fuzz/data-snapshot';
import {TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';

describe('API fuzzer data snapshot', () => {
  let client: Client;
  let snapshots: DataSnapshotter;
  before(async () => {
    await truncateAll();
    client = new Client({connectionString: TEST_DATABASE_URL});
    await client.connect();
    snapshots = new DataSnapshotter(client);
  });
  after(async () => {
    await truncateAll();
    await client.end();
  });

  it('sees no change when nothing was written', async () => {
    await client.query(`INSERT INTO config (key, value) VALUES ('a', '1')`);
    const before = await snapshots.take();
    await client.query(`SELECT * FROM config`);
    expect(changedTables(before, await snapshots.take())).to.be.empty();
  });

  it('names the tables an insert, update or delete touched', async () => {
    const before = await snapshots.take();
    await client.query(`UPDATE config SET value = '2' WHERE key = 'a'`);
    await client.query(`INSERT INTO language (code, name) VALUES ('x', 'X')`);
    expect(changedTables(before, await snapshots.take())).to.deepEqual([
      'config (1 → 1 rows)',
      'language (0 → 1 rows)',
    ]);
  });
});
