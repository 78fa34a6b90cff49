import {expect} from '@loopback/testlab';
import {execFile} from 'node:child_process';
import {chownSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir, userInfo} from 'node:os';
import path from 'node:path';
import {promisify} from 'node:util';
import {migrateDatabase} from '../../database/migration-runner';
import {TASK_QUEUE} from '../../queue/topology';
import {LogCapture} from '../fixtures/log-capture';
import {freePort} from '../fixtures/pgbouncer';
import {PrivatePostgres} from '../fixtures/private-postgres';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
} from '../fixtures/test-consumer';
import {givenCatalog, sqlAt, truncateAll} from '../fixtures/test-database';
import {givenProducer, TestProducer} from '../fixtures/test-producer';
import {
  LOST_RUN_KEY,
  RECORDING_WORKER,
  recordedRuns,
  sweepAs,
} from '../fixtures/lost-runs';

const exec = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';
const KEY = LOST_RUN_KEY;
const DB = 'task_scheduler_failover';

/** Runs a PostgreSQL binary as the postgres user when we are root. */
async function asPostgres(command: string, args: string[]): Promise<void> {
  const root = userInfo().uid === 0;
  await exec(
    root ? 'runuser' : command,
    root ? ['-u', 'postgres', '--', command, ...args] : args,
    {timeout: 60_000},
  );
}

/**
 * Found by the second hostile review of the lost-run sweep: a promoted
 * standby that lagged behind (asynchronous replication; the ledger's marks
 * never wait for a standby anyway) lacks the start and success marks of a
 * run that ran on the old primary, and finds it `published`. A failover
 * does not reset pg_stat_wal (a standby's statistics date from its own
 * start), so the crash rule did not see it and the sweep ran the task a
 * second time. The new timeline now makes a new ledger epoch.
 */
describe('lost-run sweep after a failover to a lagging standby', function (this: Mocha.Suite) {
  this.timeout(180_000);
  let primary: PrivatePostgres;
  let standbyDir: string;
  let standbyPort: number;
  let workersDir: string;
  let p: TestProducer | undefined;
  const workerRuns = () => recordedRuns(workersDir);
  const standbyUrl = () => `postgres://postgres@127.0.0.1:${standbyPort}/${DB}`;

  before(async () => {
    primary = await PrivatePostgres.start({
      wal_writer_delay: '10s',
      wal_writer_flush_after: '1GB',
    });
    await migrateDatabase(primary.url(DB), new LogCapture('error').logger);
    await truncateAll(primary.url(DB));
    await givenCatalog(primary.url(DB));
    await sqlAt(
      primary.url(DB),
      `UPDATE worker SET command = 'records' WHERE id = 1`,
    );
    workersDir = givenWorkersDir({
      records: RECORDING_WORKER,
    });
    // A streaming standby of the primary, started now.
    standbyDir = mkdtempSync(path.join(tmpdir(), 'task-scheduler-standby-'));
    if (userInfo().uid === 0) {
      const {stdout: uid} = await exec('id', ['-u', 'postgres']);
      const {stdout: gid} = await exec('id', ['-g', 'postgres']);
      chownSync(standbyDir, Number(uid), Number(gid));
    }
    standbyPort = await freePort();
    await asPostgres(BIN + '/pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      path.join(standbyDir, 'data'),
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await asPostgres(BIN + '/pg_ctl', [
      '-D',
      path.join(standbyDir, 'data'),
      '-l',
      path.join(standbyDir, 'server.log'),
      '-o',
      `-p ${standbyPort} -k ${standbyDir} -c listen_addresses=127.0.0.1 -c fsync=off -c hot_standby=on -c max_connections=200`,
      '-w',
      'start',
    ]);
  });
  after(async () => {
    await p?.stop();
    await asPostgres(BIN + '/pg_ctl', [
      '-D',
      path.join(standbyDir, 'data'),
      '-m',
      'immediate',
      '-w',
      'stop',
    ]).catch(() => undefined);
    rmSync(standbyDir, {recursive: true, force: true});
    await primary?.stop();
    rmSync(workersDir, {recursive: true, force: true});
  });

  it('fails, never sends again, a run whose marks the promoted standby never received', async () => {
    await resetBroker();
    // The standby has been up a while before the run.
    await new Promise(resolve => setTimeout(resolve, 2000));
    const [scheduler] = await sqlAt<{id: number}>(
      primary.url(DB),
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '0 0 1 1 *', 1) RETURNING id`,
    );
    const [row] = await sqlAt<{id: string}>(
      primary.url(DB),
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at)
       VALUES ($1, $2, 'test', 'published', now(), now()) RETURNING id`,
      [scheduler.id, KEY],
    );
    const id = Number(row.id);
    await eventually(
      async () =>
        (
          await sqlAt(
            standbyUrl(),
            `SELECT 1 FROM scheduler_execution WHERE id = $1`,
            [id],
          )
        ).length === 1,
      15_000,
      'the published run to reach the standby',
    );
    // Replication lags from here (a network partition, a slow standby).
    await sqlAt(standbyUrl(), `ALTER SYSTEM SET primary_conninfo = ''`);
    await sqlAt(standbyUrl(), `SELECT pg_reload_conf()`);
    await eventually(
      async () =>
        (await sqlAt(standbyUrl(), `SELECT 1 FROM pg_stat_wal_receiver`))
          .length === 0,
      15_000,
      'the standby to stop receiving',
    );

    // The run runs to the end on the primary.
    const consumer = await givenConsumer({
      workersDir,
      databaseUrl: primary.url(DB),
    });
    try {
      await publishTask(
        {
          type: 'worker',
          id: 1,
          scheduler_id: scheduler.id,
          params_scheduler: '{}',
        },
        {'x-execution-id': id, 'x-execution-key': KEY},
      );
      await eventually(
        async () => consumer.logs.find('Task succeeded').length === 1,
        15_000,
        'its success',
      );
    } finally {
      await consumer.stop(100);
    }
    expect(
      (
        await sqlAt(
          primary.url(DB),
          `SELECT status FROM scheduler_execution WHERE id = $1`,
          [id],
        )
      )[0],
    ).to.containDeep({status: 'succeeded'});

    // The primary is lost; the standby is promoted and the service moves to it.
    await asPostgres(BIN + '/pg_ctl', [
      '-D',
      path.join(primary.dir, 'data'),
      '-m',
      'immediate',
      '-w',
      'stop',
    ]);
    await sqlAt(standbyUrl(), `SELECT pg_promote(true, 60)`);
    const [state] = await sqlAt(
      standbyUrl(),
      `SELECT e.status, e.published_at, w.stats_reset, pg_is_in_recovery() AS in_recovery
         FROM scheduler_execution e, pg_stat_wal w WHERE e.id = $1`,
      [id],
    );
    expect(state).to.containDeep({status: 'published', in_recovery: false});

    await new Promise(resolve => setTimeout(resolve, 1500));
    p = await givenProducer({}, 'failover', standbyUrl());
    const result = await sweepAs(p, {lostAfterMs: 1000});
    expect(result).to.containDeep({resent: 0, failed: 1});
    expect(
      p.logs.find(
        'The run ledger changed hands (another cluster, timeline or table): runs claimed before now are not sent again',
      ),
    ).to.have.length(1);
    const copies = await drainQueue(TASK_QUEUE);
    expect(copies.length).to.equal(0);
    expect(workerRuns()).to.deepEqual([`${KEY} 1`]);
  });
});
