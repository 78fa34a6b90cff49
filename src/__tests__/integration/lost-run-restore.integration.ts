import {expect} from '@loopback/testlab';
import {execFile} from 'node:child_process';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {promisify} from 'node:util';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
} from '../fixtures/test-consumer';
import {dropDatabase} from '../../database/database-admin';
import {migrateDatabase} from '../../database/migration-runner';
import {LogCapture} from '../fixtures/log-capture';
import {
  givenCatalog,
  sqlAt,
  truncateAll,
  uniqueDatabaseUrl,
  untilLastCrashOlderThan,
} from '../fixtures/test-database';
import {givenProducer, TestProducer} from '../fixtures/test-producer';
import {
  LOST_RUN_KEY,
  RECORDING_WORKER,
  recordedRuns,
  sweepAs,
} from '../fixtures/lost-runs';

const run = promisify(execFile);
const url = uniqueDatabaseUrl('restore');
const sql = <T = Record<string, unknown>>(
  text: string,
  values: unknown[] = [],
) => sqlAt<T>(url, text, values);
const KEY = LOST_RUN_KEY;

/**
 * Found by the second hostile review of the lost-run sweep: after
 * docs/operations.md "Restoring the database" (stop everything, pg_restore
 * the dump, purge the task queues, start again) a run in flight at the dump
 * is `retrying` again in the restored ledger, idle since the dump, its
 * queues empty (purged, as the runbook says), and no crash to tell: the
 * sweep sent it again, and a retry that ran to the end after the dump ran a
 * second time. The restore recreates the ledger's table, so the sweep now
 * sees a new ledger epoch and fails such a run instead. On a database of
 * its own: the restore replaces every table.
 */
describe('lost-run sweep after a database restore (operations.md)', function (this: Mocha.Suite) {
  this.timeout(120_000);
  let workersDir: string;
  let dumpDir: string;
  let p: TestProducer | undefined;
  const workerRuns = () => recordedRuns(workersDir);

  before(async () => {
    workersDir = givenWorkersDir({
      records: RECORDING_WORKER,
    });
    dumpDir = mkdtempSync(path.join(tmpdir(), 'task-scheduler-dump-'));
    await migrateDatabase(url, new LogCapture('error').logger);
    await untilLastCrashOlderThan(200);
  });
  after(async () => {
    rmSync(workersDir, {recursive: true, force: true});
    rmSync(dumpDir, {recursive: true, force: true});
    await dropDatabase(url);
  });
  beforeEach(async () => {
    await truncateAll(url);
    await givenCatalog(url);
    await resetBroker();
    await sql(`UPDATE worker SET command = 'records' WHERE id = 1`);
  });
  afterEach(async () => {
    await p?.stop();
    p = undefined;
  });

  it('fails, never sends again, a retry that may have run after the dump', async () => {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '0 0 1 1 *', 1) RETURNING id`,
    );
    // At the dump: attempt 1 failed 2 minutes ago, its retry is waiting.
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at,
          started_at, finished_at, attempts, last_retry_count)
       VALUES ($1, $2, 'test', 'retrying', now() - interval '3 minutes',
               now() - interval '3 minutes', now() - interval '2 minutes',
               now() - interval '2 minutes', 1, 0)
       RETURNING id`,
      [scheduler.id, KEY],
    );
    const id = Number(row.id);
    const dump = path.join(dumpDir, 'backup.dump');
    await run('pg_dump', ['-Fc', '-f', dump, '-d', url]);

    // After the dump: the retry comes back and runs to the end.
    const c = await givenConsumer({workersDir, databaseUrl: url});
    try {
      await publishTask(
        {
          type: 'worker',
          id: 1,
          scheduler_id: scheduler.id,
          params_scheduler: '{}',
        },
        {'x-execution-id': id, 'x-execution-key': KEY, 'x-retry-count': 1},
      );
      await eventually(
        async () =>
          (
            await sql<{status: string}>(
              `SELECT status FROM scheduler_execution WHERE id = $1`,
              [id],
            )
          )[0].status === 'succeeded',
        15_000,
        'the retry to succeed',
      );
    } finally {
      await c.stop(100);
    }
    expect(workerRuns()).to.deepEqual([`${KEY} 2`]);

    // The runbook: everything stopped; restore; purge the task queues; start.
    // pg_restore may exit non-zero on harmless warnings (object owners);
    // the rows read back below show that the restore took place.
    await run('pg_restore', ['--clean', '--if-exists', '-d', url, dump]).catch(
      () => undefined,
    );
    await resetBroker();
    const [restored] = await sql(
      `SELECT status, resent FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    expect(restored).to.containDeep({status: 'retrying', resent: 0});
    p = await givenProducer({}, 'restore', url);

    const result = await sweepAs(p);
    expect(result).to.containDeep({resent: 0, failed: 1});
    const copies = await drainQueue(TASK_QUEUE);
    expect(copies.length).to.equal(0);
    expect(workerRuns()).to.deepEqual([`${KEY} 2`]);
  });
});
