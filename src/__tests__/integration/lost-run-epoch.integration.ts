import {expect} from '@loopback/testlab';
import {createPool} from '../../database/pg-pool';
import {recordLedgerEpoch} from '../../producer/ledger-epoch';
import {LogCapture} from '../fixtures/log-capture';
import {sql, TEST_DATABASE_URL} from '../fixtures/test-database';

describe("ledger epoch: the lost-run sweep's record of where the ledger lives", function (this: Mocha.Suite) {
  this.timeout(30_000);
  it('ten producers at once on a missing row: one insert, no error; then no change', async () => {
    const pool = createPool(TEST_DATABASE_URL, new LogCapture().logger, 10);
    try {
      const before = await sql(`SELECT * FROM ledger_epoch`);
      await sql(`DELETE FROM ledger_epoch`);
      const changed = await Promise.all(
        Array.from({length: 10}, () => recordLedgerEpoch(pool)),
      );
      expect(changed.filter(Boolean).length).to.equal(1);
      await sql(`UPDATE ledger_epoch SET timeline_id = timeline_id + 7`);
      const again = await Promise.all(
        Array.from({length: 10}, () => recordLedgerEpoch(pool)),
      );
      expect(again.filter(Boolean).length).to.equal(1);
      const quiet = await Promise.all(
        Array.from({length: 10}, () => recordLedgerEpoch(pool)),
      );
      expect(quiet.filter(Boolean).length).to.equal(0);
      // Restore the migration's row for other tests of this run.
      await sql(`UPDATE ledger_epoch SET changed_at = $1`, [
        (before[0] as {changed_at: unknown}).changed_at ?? '-infinity',
      ]);
    } finally {
      await pool.end();
    }
  });

  it('writes nothing when nothing changed (a pass a minute per producer)', async () => {
    const pool = createPool(TEST_DATABASE_URL, new LogCapture().logger, 2);
    try {
      await recordLedgerEpoch(pool);
      const [before] = await sql(
        `SELECT xmin::text, xmax::text FROM ledger_epoch`,
      );
      for (let pass = 0; pass < 3; pass++) {
        expect(await recordLedgerEpoch(pool)).to.be.false();
      }
      expect(
        await sql(`SELECT xmin::text, xmax::text FROM ledger_epoch`),
      ).to.deepEqual([before]);
    } finally {
      await pool.end();
    }
  });
});
