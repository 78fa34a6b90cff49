import {expect} from '@loopback/testlab';
import {rmSync} from 'node:fs';
import path from 'node:path';
import {migrateDatabase} from '../../database/migration-runner';
import {TASK_QUEUE} from '../../queue/topology';
import {LogCapture} from '../fixtures/log-capture';
import {PrivatePostgres} from '../fixtures/private-postgres';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';
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

const KEY = LOST_RUN_KEY;

/**
 * Found by the hostile review of the lost-run sweep: the run ledger's marks
 * commit asynchronously (docs/tasks.md, Run ledger), so a PostgreSQL crash
 * can erase the start and success marks of a run that ran to the end and
 * was acknowledged. The run is then `published` again, with no message
 * anywhere, exactly like a run whose message the broker lost, and the
 * sweep ran the task a second time (5 runs of 6 on a server whose WAL
 * writer waits 10 s). Now a run idle since before the last crash recovery
 * is failed for an operator to look at, never sent again. These tests
 * crash a PostgreSQL server of their own.
 */
describe('lost-run sweep after a PostgreSQL crash', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let server: PrivatePostgres;
  let url: string;
  let workersDir: string;
  let p: TestProducer | undefined;
  const runsFile = () => path.join(workersDir, 'runs.out');
  const workerRuns = () => recordedRuns(workersDir);
  const sql = <T = Record<string, unknown>>(
    text: string,
    values: unknown[] = [],
  ) => sqlAt<T>(url, text, values);

  before(async () => {
    // A WAL writer that waits 10 s: the last asynchronous commits are
    // still in memory when the server crashes, as they can be in production.
    server = await PrivatePostgres.start({
      wal_writer_delay: '10s',
      wal_writer_flush_after: '1GB',
      autovacuum: 'off',
      bgwriter_lru_maxpages: '0',
    });
    url = server.url('task_scheduler_crash');
    await migrateDatabase(url, new LogCapture('error').logger);
    workersDir = givenWorkersDir({
      records: RECORDING_WORKER,
    });
  });
  after(async () => {
    await server?.stop();
    rmSync(workersDir, {recursive: true, force: true});
  });
  beforeEach(async () => {
    rmSync(runsFile(), {force: true});
    await truncateAll(url);
    await givenCatalog(url);
    await resetBroker();
    await sql(`UPDATE worker SET command = 'records' WHERE id = 1`);
  });
  afterEach(async () => {
    await p?.stop();
    p = undefined;
  });

  async function givenPublishedRun(idleSeconds: number): Promise<number> {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '0 0 1 1 *', 1) RETURNING id`,
    );
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at)
       VALUES ($1, $2, 'test', 'published', now() - make_interval(secs => $3),
               now() - make_interval(secs => $3))
       RETURNING id`,
      [scheduler.id, KEY, idleSeconds],
    );
    return Number(row.id);
  }

  it('fails a run idle since before the crash instead of sending it again; sends one idle since after it', async () => {
    const before = await givenPublishedRun(120);
    await sql('CHECKPOINT');
    await server.crash();
    await new Promise(resolve => setTimeout(resolve, 3000));
    const since = await givenPublishedRun(2);
    p = await givenProducer({}, 'crash', url);

    const result = await sweepAs(p, {lostAfterMs: 1000});

    expect(result).to.containDeep({resent: 1, failed: 1});
    const [failed] = await sql<{status: string; last_error: string}>(
      `SELECT status, last_error FROM scheduler_execution WHERE id = $1`,
      [before],
    );
    expect(failed.status).to.equal('failed');
    expect(failed.last_error).to.match(
      /^lost or already run: no sign of its message for 2 min, and the database crashed, failed over or was restored since the run was claimed/,
    );
    expect(
      await sql(`SELECT 1 FROM failed_task WHERE execution_id = $1`, [before]),
    ).to.have.length(1);
    const copies = await drainQueue(TASK_QUEUE);
    expect(
      copies.map(m => m.properties.headers?.['x-execution-id']),
    ).to.deepEqual([since]);
  });

  it('never runs a task twice when the crash erased the marks of its successful run', async () => {
    const id = await givenPublishedRun(120);
    const [{scheduler_id: schedulerId}] = await sql<{scheduler_id: number}>(
      `SELECT scheduler_id FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    await sql('CHECKPOINT');
    const consumer = await givenConsumer({workersDir, databaseUrl: url});
    try {
      await publishTask(
        {
          type: 'worker',
          id: 1,
          scheduler_id: schedulerId,
          params_scheduler: '{}',
        },
        {'x-execution-id': id, 'x-execution-key': KEY},
      );
      await eventually(
        () => workerRuns().length === 1,
        15_000,
        'the task to run',
      );
      await eventually(
        async () => consumer.logs.find('Task succeeded').length === 1,
        15_000,
        'its success',
      );
    } finally {
      await consumer.stop(100);
    }
    await server.crash();
    const [afterCrash] = await sql<{status: string}>(
      `SELECT status FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    p = await givenProducer({}, 'crash', url);

    await sweepAs(p);

    // Whatever the crash kept of the marks, the task is not sent again.
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    expect(workerRuns()).to.deepEqual([`${KEY} 1`]);
    const [row] = await sql<{status: string}>(
      `SELECT status FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    expect(
      afterCrash.status === 'succeeded'
        ? row.status === 'succeeded'
        : row.status === 'failed',
    ).to.be.true();
  });

  it('never runs a task twice when the crash erased its marks, though the producer host clock runs 20 s ahead', async () => {
    const skewSeconds = 20;
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '0 0 1 1 *', 1) RETURNING id`,
    );
    // Claimed by the database's clock; its confirm time as the producer's
    // host (20 s ahead) wrote it through markPublished.
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at)
       VALUES ($1, $2, 'test', 'published', now(),
               now() + make_interval(secs => $3))
       RETURNING id`,
      [scheduler.id, KEY, skewSeconds],
    );
    const id = Number(row.id);
    await sql('CHECKPOINT');
    const consumer = await givenConsumer({workersDir, databaseUrl: url});
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
      await eventually(() => workerRuns().length === 1, 15_000, 'the task');
      await eventually(
        async () => consumer.logs.find('Task succeeded').length === 1,
        15_000,
        'its success',
      );
    } finally {
      await consumer.stop(100);
    }
    await server.crash();
    const [afterCrash] = await sql<{
      status: string;
      published_at: Date;
      stats_reset: Date;
    }>(
      `SELECT status, published_at, (SELECT stats_reset FROM pg_stat_wal) AS stats_reset
         FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    // The run's marks were erased by the crash (the WAL writer waits 10 s).
    expect(afterCrash.status).to.equal('published');
    // The run ages past the cut-off (1 s) by the database's clock.
    await new Promise(resolve => setTimeout(resolve, (skewSeconds + 2) * 1000));
    p = await givenProducer({}, 'crash', url);

    const result = await sweepAs(p, {lostAfterMs: 1000});
    expect(result).to.containDeep({resent: 0, failed: 1});
    const copies = await drainQueue(TASK_QUEUE);
    // The promise: after a DB crash, nothing is sent again that may have run.
    expect(copies.length).to.equal(0);
    expect(workerRuns()).to.deepEqual([`${KEY} 1`]);
  });
});
