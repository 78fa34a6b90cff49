import {expect} from '@loopback/testlab';
import {execFile} from 'node:child_process';
import {mkdtempSync, readdirSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {promisify} from 'node:util';
import runner from 'node-pg-migrate';
import {Client, Pool} from 'pg';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {dropDatabase, ensureDatabase} from '../../database/database-admin';
import {
  migrateDatabase,
  MIGRATIONS_DIR,
  MIGRATIONS_TABLE,
} from '../../database/migration-runner';
import {LogCapture} from '../fixtures/log-capture';
import {
  givenCatalog,
  sqlAt,
  uniqueDatabaseUrl,
} from '../fixtures/test-database';
import {givenProducer, TestProducer} from '../fixtures/test-producer';
import {LOST_RUN_KEY, sweepAs} from '../fixtures/lost-runs';

const run = promisify(execFile);
const oldUrl = uniqueDatabaseUrl('predump');
const newUrl = uniqueDatabaseUrl('restored');
const KEY = LOST_RUN_KEY;

/**
 * Found by the third hostile review of the lost-run sweep: docs/operations.md
 * "Restoring the database" allows a restore into a new database, then
 * `npm run migrate`. For a dump taken before ledger_epoch existed (every
 * backup there is on the day this is deployed) the migration created the
 * table with the restored ledger's own oid and no known change, and a run
 * open at the dump was sent again. The migration now starts the epoch at
 * its own time when runs are open. And a restore of such a dump with
 * --clean into the upgraded database left ledger_epoch behind (it is not in
 * the dump), so `npm run migrate` failed with "already exists".
 */
describe('lost-run sweep after a restore of a dump older than ledger_epoch', function (this: Mocha.Suite) {
  this.timeout(120_000);
  let dumpDir: string;
  let p: TestProducer | undefined;

  before(async () => {
    dumpDir = mkdtempSync(path.join(tmpdir(), 'task-scheduler-dump-'));
    const logger = new LogCapture('error').logger;
    await migrateDatabase(oldUrl, logger);
    // The database as the previous release left it: without 1796000000000,
    // 1796000000001 and every migration after them.
    const c = new Client({connectionString: oldUrl});
    await c.connect();
    try {
      await runner({
        dbClient: c,
        noLock: true,
        dir: MIGRATIONS_DIR,
        ignorePattern: '(?!.*\\.sql$).*',
        direction: 'down',
        count: readdirSync(MIGRATIONS_DIR).filter(
          file => file.endsWith('.sql') && file >= '1796000000000',
        ).length,
        migrationsTable: MIGRATIONS_TABLE,
        singleTransaction: true,
        logger: {debug() {}, info() {}, warn() {}, error() {}},
      });
    } finally {
      await c.end();
    }
  });
  after(async () => {
    await p?.stop();
    rmSync(dumpDir, {recursive: true, force: true});
    await dropDatabase(oldUrl);
    await dropDatabase(newUrl);
  });

  it('fails, never sends again, a retry open at the dump, restored into a new database', async () => {
    const [{exists}] = await sqlAt<{exists: boolean}>(
      oldUrl,
      `SELECT to_regclass('ledger_epoch') IS NOT NULL AS exists`,
    );
    expect(exists).to.be.false();
    await givenCatalog(oldUrl);
    const [scheduler] = await sqlAt<{id: number}>(
      oldUrl,
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '0 0 1 1 *', 1) RETURNING id`,
    );
    // At the dump: attempt 1 failed 2 minutes ago, its retry is waiting.
    const [row] = await sqlAt<{id: string}>(
      oldUrl,
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at,
          started_at, finished_at, attempts, last_retry_count)
       VALUES ($1, $2, 'test', 'retrying', now() - interval '3 minutes',
               now() - interval '3 minutes', now() - interval '2 minutes',
               now() - interval '2 minutes', 1, 0)
       RETURNING id`,
      [scheduler.id, KEY],
    );
    const dump = path.join(dumpDir, 'backup.dump');
    await run('pg_dump', ['-Fc', '-f', dump, '-d', oldUrl]);
    // (After the dump the retry ran to the end on the old database.)

    // The runbook: restore into a new database, npm run migrate, purge, start.
    await ensureDatabase(newUrl);
    await run('pg_restore', ['--no-owner', '-d', newUrl, dump]).catch(
      () => undefined,
    );
    const migrated = await migrateDatabase(
      newUrl,
      new LogCapture('error').logger,
    );
    expect(migrated.applied).to.containEql('1796000000000_lost-run-resend');
    expect(migrated.applied).to.containEql(
      '1796000000001_lost-run-confirmed-copies-and-ledger-epoch',
    );
    await resetBroker();
    p = await givenProducer({}, 'restored', newUrl);
    const result = await sweepAs(p);
    const copies = await drainQueue(TASK_QUEUE);
    expect(result).to.containDeep({resent: 0, failed: 1});
    expect(copies.length).to.equal(0);
    expect(Number(row.id)).to.be.above(0);
  });

  it('migrates after a restore --clean into the same database, and still sees a new ledger', async () => {
    // The old database is upgraded to this release, then restored from the
    // pre-release dump in place, as the runbook's first variant says.
    const dump = path.join(dumpDir, 'backup.dump');
    await migrateDatabase(oldUrl, new LogCapture('error').logger);
    await run('pg_restore', [
      '--clean',
      '--if-exists',
      '-d',
      oldUrl,
      dump,
    ]).catch(() => undefined);
    // The dump has no ledger_epoch nor known_time_zone: --clean leaves both
    // tables, and the restored migrations table no longer records theirs.
    expect(
      await sqlAt(
        oldUrl,
        `SELECT to_regclass('ledger_epoch')::text AS t,
                to_regclass('known_time_zone')::text AS zones,
                (SELECT count(*) FROM pgmigrations
                  WHERE name IN ('1796000000000_lost-run-resend',
                                 '1796100000000_known-time-zone-names'))::int AS recorded`,
      ),
    ).to.deepEqual([
      {t: 'ledger_epoch', zones: 'known_time_zone', recorded: 0},
    ]);
    const error = await migrateDatabase(
      oldUrl,
      new LogCapture('error').logger,
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).to.be.undefined();
    const {recordLedgerEpoch} = await import('../../producer/ledger-epoch');
    // The table left behind holds the old ledger's oid: a new epoch.
    const pool = new Pool({connectionString: oldUrl});
    try {
      expect(await recordLedgerEpoch(pool)).to.be.true();
    } finally {
      await pool.end();
    }
  });
});
