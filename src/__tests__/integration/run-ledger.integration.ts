import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {createLedgerPool, RunLedger} from '../../consumer/run-ledger';
import {LogCapture} from '../fixtures/log-capture';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

describe('run ledger', () => {
  const logs = new LogCapture();
  let pools: Pool[] = [];
  const ledgerPool = (durable: boolean) => {
    const pool = createLedgerPool(TEST_DATABASE_URL, logs.logger, durable);
    pools.push(pool);
    return pool;
  };

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
  });
  afterEach(async () => {
    await Promise.all(pools.map(pool => pool.end()));
    pools = [];
  });

  async function givenExecution(status = 'published'): Promise<number> {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, 'cron-2026-11-21-10-00', 'test', $2,
               CASE WHEN $2 = 'claimed' THEN NULL ELSE now() END) RETURNING id`,
      [scheduler.id, status],
    );
    return Number(execution.id);
  }

  const row = async (id: number) =>
    (await sql(`SELECT * FROM scheduler_execution WHERE id = $1`, [id]))[0];

  it('commits asynchronously by default and durably when configured', async () => {
    const setting = async (pool: Pool) =>
      (await pool.query('SHOW synchronous_commit')).rows[0]
        .synchronous_commit as string;
    expect(await setting(ledgerPool(false))).to.equal('off');
    expect(await setting(ledgerPool(true))).to.equal('on');
  });

  it('makes the start mark of a run without published_at durable before the task runs', async () => {
    const unpublished = await givenExecution('claimed');
    const published = await givenExecution('published');
    const marks = ledgerPool(false);
    const durable = ledgerPool(true);
    const flushes: string[] = [];
    const query = durable.query.bind(durable) as (...a: unknown[]) => unknown;
    (durable as unknown as {query: unknown}).query = (...args: unknown[]) => {
      flushes.push('flush');
      return query(...args);
    };
    const ledger = new RunLedger(marks, durable);

    expect(await ledger.start(published, new Date())).to.equal('run');
    // The producer's durable publish mark exists: the sweeper never looks again.
    expect(flushes).to.have.length(0);

    // A durable session that fails leaves the unpublished run untouched, so
    // a requeued delivery is not counted as a start its consumer died in.
    const broken = new RunLedger(marks, {
      query: () => Promise.reject(new Error('connection lost')),
    } as unknown as Pool);
    await expect(broken.start(unpublished, new Date())).to.be.rejectedWith(
      /connection lost/,
    );
    expect(await row(unpublished)).to.containDeep({
      status: 'claimed',
      attempts: 0,
    });

    const lsn = (text: string) => {
      const [high, low] = text.split('/');
      return BigInt(`0x${high}`) * 2n ** 32n + BigInt(`0x${low}`);
    };
    const [{before}] = await sql<{before: string}>(
      'SELECT pg_current_wal_insert_lsn() AS before',
    );
    expect(await ledger.start(unpublished, new Date())).to.equal('run');
    const [{flushed}] = await sql<{flushed: string}>(
      'SELECT pg_current_wal_flush_lsn() AS flushed',
    );
    expect(flushes).to.have.length(1);
    // The WAL holding the start mark (written after `before`) is on disk.
    expect(lsn(flushed) > lsn(before)).to.be.true();
  });

  it('does not start a run the sweeper skipped as too old', async () => {
    const id = await givenExecution('skipped');
    const ledger = new RunLedger(ledgerPool(false));
    expect(await ledger.start(id, new Date())).to.equal('skipped');
    expect(await row(id)).to.containDeep({status: 'skipped', attempts: 0});
  });

  it('makes an asynchronously committed mark visible to other sessions at once', async () => {
    const id = await givenExecution();
    const ledger = new RunLedger(ledgerPool(false));
    const at = new Date('2026-11-21T10:00:01Z');
    expect(await ledger.start(id, at)).to.equal('run');
    // `sql` opens its own session: what a redelivery on another consumer sees.
    expect(await row(id)).to.containDeep({
      status: 'running',
      attempts: 1,
      started_at: at,
    });
    await ledger.finished(id, 'succeeded', new Date(at.getTime() + 250), 250);
    expect(await row(id)).to.containDeep({
      status: 'succeeded',
      duration_ms: 250,
    });
    expect(await ledger.start(id, at)).to.equal('succeeded');
    expect((await row(id)).attempts).to.equal(1);
  });

  it('runs an unknown execution id without recording it, and counts attempts of retries', async () => {
    const ledger = new RunLedger(ledgerPool(false));
    expect(await ledger.start(987654, new Date())).to.equal('run');
    expect(await sql(`SELECT id FROM scheduler_execution`)).to.have.length(0);

    const id = await givenExecution();
    expect(await ledger.start(id, new Date(), 0)).to.equal('run');
    await ledger.finished(id, 'retrying', new Date(), 5, 'exit code 3');
    // A second copy of the attempt that already ran is a duplicate...
    expect(await ledger.start(id, new Date(), 0)).to.equal(
      'attempt-already-ran',
    );
    // ...the retry copy, with the next retry count, runs.
    expect(await ledger.start(id, new Date(), 1)).to.equal('run');
    expect(await row(id)).to.containDeep({
      status: 'running',
      attempts: 2,
      last_error: 'exit code 3',
      finished_at: null,
    });
  });

  it('refuses a run whose scheduler was deleted (and its row with it); runs one whose row alone is gone', async () => {
    const ledger = new RunLedger(ledgerPool(false));
    const orphan = await givenExecution();
    const [{scheduler_id: deleted}] = await sql<{scheduler_id: number}>(
      `DELETE FROM scheduler WHERE id = (SELECT scheduler_id FROM scheduler_execution WHERE id = $1)
       RETURNING id AS scheduler_id`,
      [orphan],
    );
    expect(await ledger.start(orphan, new Date(), 0, 0, deleted)).to.equal(
      'scheduler-deleted',
    );
    expect(await ledger.whyNotStarted(orphan, 0, deleted)).to.equal(
      'scheduler-deleted',
    );
    const cleaned = await givenExecution();
    const [{scheduler_id: living}] = await sql<{scheduler_id: number}>(
      `DELETE FROM scheduler_execution WHERE id = $1 RETURNING scheduler_id`,
      [cleaned],
    );
    expect(await ledger.start(cleaned, new Date(), 0, 0, living)).to.equal(
      'run',
    );
    // A delivery that names no scheduler runs as before.
    expect(await ledger.start(orphan, new Date())).to.equal('run');
    // One without an execution id is judged by its scheduler alone.
    expect(await ledger.start(undefined, new Date(), 0, 0, deleted)).to.equal(
      'scheduler-deleted',
    );
    expect(await ledger.start(undefined, new Date(), 0, 0, living)).to.equal(
      'run',
    );
  });

  it("never lets a late mark of an earlier attempt overwrite a later attempt's outcome", async () => {
    // The retry is published before its attempt's 'retrying' mark, which a
    // database cut may hold back for seconds (seen in the chaos suite): the
    // retries can run and fail for good first.
    const ledger = new RunLedger(ledgerPool(false));
    const id = await givenExecution();
    expect(await ledger.start(id, new Date(), 0)).to.equal('run');
    expect(await ledger.start(id, new Date(), 1)).to.equal('run');
    // The late 'retrying' of attempt 0 while attempt 1 runs: still running.
    await ledger.finished(id, 'retrying', new Date(), 5, 'attempt 0', 0);
    expect(await row(id)).to.containDeep({status: 'running', attempts: 2});
    await ledger.finished(id, 'failed', new Date(), 5, 'attempt 1', 1);
    // ...and after attempt 1 failed for good: still failed.
    await ledger.finished(id, 'retrying', new Date(), 5, 'attempt 0', 0);
    expect(await row(id)).to.containDeep({
      status: 'failed',
      last_error: 'attempt 1',
    });
  });
});
