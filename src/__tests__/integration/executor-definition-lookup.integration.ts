import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {createPool} from '../../database/pg-pool';
import {HttpExecutor} from '../../executors/http.executor';
import {ReportExecutor} from '../../executors/report.executor';
import {
  beforeTaskStarts,
  TaskContext,
  TaskExecutor,
  TaskFailure,
  TaskNotStarted,
} from '../../executors/task-executor';
import {WorkerExecutor} from '../../executors/worker.executor';
import {NOTHING_ALLOWED} from '../../outbound/address-policy';
import {LogCapture} from '../fixtures/log-capture';
import {closedPort, viaPort} from '../fixtures/tcp-proxy';
import {TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';

/**
 * What a task needs before its work begins (its worker, report or HTTP
 * target row) is read from PostgreSQL: when that read fails, the task never
 * began (TaskNotStarted, requeued without spending a retry); a row that is
 * gone is still the task's failure.
 */
describe('executors: the definition read before a task starts', () => {
  const logs = new LogCapture();
  const pools: Pool[] = [];
  const poolOn = (url: string) => {
    const pool = createPool(url, logs.logger, 1);
    pools.push(pool);
    return pool;
  };
  after(async () => {
    await Promise.all(pools.map(pool => pool.end()));
  });
  beforeEach(() => truncateAll());

  const executors: Record<string, (pool: Pool) => TaskExecutor> = {
    worker: pool =>
      new WorkerExecutor(pool, {
        workersDir: '/nonexistent',
        defaultTimeoutMs: 1000,
        killGraceMs: 100,
        env: {},
        outputMaxBytes: 1024,
      }),
    report: pool =>
      new ReportExecutor(pool, {
        defaultTimeoutMs: 1000,
        killGraceMs: 100,
        env: {},
        outputMaxBytes: 1024,
      }),
    http: pool =>
      new HttpExecutor(pool, {outboundAllow: NOTHING_ALLOWED, timeZone: 'UTC'}),
  };
  const names = {worker: 'worker', report: 'report', http: 'HTTP target'};

  const contextFor = (type: string): TaskContext => ({
    message: {
      type: type as TaskContext['message']['type'],
      id: 987_654,
      scheduler_id: 1,
      params_scheduler: '{}',
    },
    params: {},
    attempt: 1,
    logger: logs.logger,
    signal: new AbortController().signal,
  });

  for (const [type, build] of Object.entries(executors)) {
    const name = names[type as keyof typeof names];
    it(`${type}: an unreachable database is TaskNotStarted, naming the ${name}`, async () => {
      const pool = poolOn(viaPort(TEST_DATABASE_URL, await closedPort()));
      const error = await build(pool)
        .execute(contextFor(type))
        .then(
          () => undefined,
          (e: Error) => e,
        );
      expect(error).to.be.instanceOf(TaskNotStarted);
      expect(error!.message).to.startWith(`${name} 987654 could not be read: `);
      expect(error!.message).to.match(/ECONNREFUSED/);
    });

    it(`${type}: a ${name} that is gone stays the task's failure`, async () => {
      const error = await build(poolOn(TEST_DATABASE_URL))
        .execute(contextFor(type))
        .then(
          () => undefined,
          (e: Error) => e,
        );
      expect(error).to.be.instanceOf(TaskFailure);
      expect(error).to.not.be.instanceOf(TaskNotStarted);
      expect(error!.message).to.equal(`${name} 987654 does not exist`);
    });
  }

  it('beforeTaskStarts keeps the cause; a TaskFailure or an error that would come again passes through', async () => {
    const cause = new Error('Connection terminated unexpectedly');
    const notStarted = await beforeTaskStarts('worker 3', () =>
      Promise.reject(cause),
    ).catch((e: Error) => e);
    expect(notStarted).to.be.instanceOf(TaskNotStarted);
    expect((notStarted as Error).message).to.equal(
      'worker 3 could not be read: Connection terminated unexpectedly',
    );
    expect((notStarted as Error).cause).to.equal(cause);
    const failure = new TaskFailure('worker 3 does not exist');
    expect(
      await beforeTaskStarts('worker 3', () => Promise.reject(failure)).catch(
        (e: Error) => e,
      ),
    ).to.equal(failure);
    expect(await beforeTaskStarts('worker 3', async () => 42)).to.equal(42);
    // An error that would come again is the task's, not the infrastructure's.
    const missingColumn = Object.assign(
      new Error('column "timeout_ms" does not exist'),
      {code: '42703'},
    );
    for (const again of [missingColumn, new TypeError('a bug')]) {
      expect(
        await beforeTaskStarts('worker 3', () => Promise.reject(again)).catch(
          (e: Error) => e,
        ),
      ).to.equal(again);
    }
    const restarting = Object.assign(
      new Error('the database is shutting down'),
      {
        code: '57P01',
      },
    );
    expect(
      await beforeTaskStarts('worker 3', () =>
        Promise.reject(restarting),
      ).catch((e: Error) => e),
    ).to.be.instanceOf(TaskNotStarted);
  });
});
