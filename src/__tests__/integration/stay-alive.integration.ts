import {expect} from '@loopback/testlab';
import {mkdtemp, rm, symlink} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import type {Pool} from 'pg';
import {loadConfig, StayAliveConfig} from '../../config';
import {createPool} from '../../database/pg-pool';
import {SupervisedWorker} from '../../stay-alive/supervised-worker';
import {StayAliveSupervisor} from '../../stay-alive/supervisor';
import {REAL_TIMERS} from '../../stay-alive/timers';
import {Metrics} from '../../metrics/metrics';
import {LogCapture, LogRecord} from '../fixtures/log-capture';
import {startService} from '../fixtures/service-process';
import {
  givenCatalog,
  sql,
  truncateAll,
  TEST_DATABASE_URL,
} from '../fixtures/test-database';
import {insertSchedulers} from '../fixtures/test-producer';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

const CONFIG = loadConfig({});
const LONG_RUNNING = {sleep_ms: '3600000'};

interface TestSupervisor {
  supervisor: StayAliveSupervisor;
  logs: LogCapture;
  pool: Pool;
  name: string;
  stop(): Promise<void>;
}

async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise(resolve => setTimeout(resolve, 20));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function givenStayAlive(params: object = LONG_RUNNING, workerId = 1) {
  return {stay_alive: true, worker_id: workerId, schedule: null, params};
}

describe('stay-alive supervisor', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  const running: TestSupervisor[] = [];

  function supervisor(
    name: string,
    settings: Partial<StayAliveConfig> = {},
    workersDir = CONFIG.workersDir,
    metrics?: Metrics,
  ): TestSupervisor {
    const logs = new LogCapture();
    const pool = createPool(TEST_DATABASE_URL, logs.logger, 2);
    const fullName = `${name}-${process.pid}`;
    const created = new StayAliveSupervisor({
      pool,
      databaseUrl: TEST_DATABASE_URL,
      settings: {
        reconcileMs: 60_000,
        restartDelayMs: 40,
        restartMaxDelayMs: 160,
        stableMs: 60_000,
        stopGraceMs: 2000,
        maxWorkers: 20,
        outputMaxBytes: 1024 * 1024,
        ...settings,
      },
      workersDir,
      env: CONFIG.childEnv,
      logger: logs.logger,
      name: fullName,
      metrics,
    });
    let stopped: Promise<void> | undefined;
    const handle = {
      supervisor: created,
      logs,
      pool,
      name: fullName,
      stop: () => (stopped ??= created.stop().then(() => pool.end())),
    };
    running.push(handle);
    return handle;
  }

  const startsOf = (logs: LogCapture, schedulerId?: number) =>
    logs
      .find('Stay-alive worker started')
      .filter(r => schedulerId === undefined || r.scheduler_id === schedulerId);

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map(s => s.stop()));
  });

  it('runs the worker of every active stay-alive scheduler, with its params as key=value arguments', async () => {
    const [first, second] = await insertSchedulers([
      givenStayAlive({...LONG_RUNNING, label: 'first'}),
      givenStayAlive({...LONG_RUNNING, batch: {size: 2}}, 2),
      {...givenStayAlive(), status: false},
      {schedule: '* * * * *', worker_id: 3},
    ]);
    const {supervisor: s, logs} = supervisor('a');
    await s.reconcile();
    expect(s.runningSchedulerIds()).to.deepEqual([first, second]);
    await until(
      () => logs.find('Stay-alive worker output').length === 2,
      'both workers print their arguments',
    );
    const printed = logs
      .find('Stay-alive worker output')
      .map(r => [r.scheduler_id, JSON.parse(String(r.line)).args]);
    expect(printed).to.containDeep([
      [
        first,
        {sleep_ms: '3600000', label: 'first', scheduler_id: String(first)},
      ],
      [
        second,
        {
          sleep_ms: '3600000',
          batch: '{"size":2}',
          scheduler_id: String(second),
        },
      ],
    ]);
    for (const start of startsOf(logs)) {
      expect(start).to.containDeep({level: 'info'});
      expect(isAlive(Number(start.child_pid))).to.be.true();
    }
  });

  it('restarts a crashing worker with growing delays, capped, and logs each exit code', async () => {
    const [id] = await insertSchedulers([givenStayAlive({exit_code: '3'})]);
    const {supervisor: s, logs} = supervisor('a');
    await s.reconcile();
    await until(() => startsOf(logs, id).length >= 5, 'five starts');
    const exits = logs.find('Stay-alive worker exited').slice(0, 4);
    expect(exits.map(r => [r.level, r.code])).to.deepEqual([
      ['warn', 3],
      ['warn', 3],
      ['warn', 3],
      ['warn', 3],
    ]);
    const delays = logs
      .find('Stay-alive worker restart scheduled')
      .slice(0, 4)
      .map(r => r.delay_ms);
    expect(delays).to.deepEqual([40, 80, 160, 160]);
    // The measured gap from each exit to the next start is at least the delay
    // (less 2 ms: log times are wall-clock milliseconds, timers monotonic).
    const starts = startsOf(logs, id).map(r => Date.parse(String(r.time)));
    exits.forEach((exit, i) => {
      expect(starts[i + 1] - Date.parse(String(exit.time))).to.be.aboveOrEqual(
        (delays[i] as number) - 2,
      );
    });
    expect(logs.find('Stay-alive worker restarting')).to.have.length(
      startsOf(logs, id).length - 1,
    );
    expect(
      logs.find('Stay-alive worker output', {stream: 'stderr'})[0].line,
    ).to.equal('sample-worker failing with 3');
  });

  it('counts its running workers and their restarts in its metrics', async () => {
    const metrics = new Metrics(new Set(['stay_alive']), {version: 'test'});
    const value = async (name: string) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values[0].value;
    expect(await value('task_scheduler_stay_alive_workers')).to.equal(0);
    const [crashing, steady] = await insertSchedulers([
      givenStayAlive({exit_code: '3'}),
      givenStayAlive(),
    ]);
    const {supervisor: s, logs, stop} = supervisor('m', {}, undefined, metrics);
    await s.reconcile();
    await until(() => startsOf(logs, crashing).length >= 4, 'four starts');
    await until(() => startsOf(logs, steady).length === 1, 'the steady one');
    const restarts = await value('task_scheduler_stay_alive_restarts_total');
    expect(restarts).to.be.aboveOrEqual(3);
    expect(restarts).to.equal(logs.find('Stay-alive worker restarting').length);
    // The steady worker runs; the crashing one runs or waits for its restart.
    expect(await value('task_scheduler_stay_alive_workers')).to.be.within(1, 2);
    await stop();
    expect(await value('task_scheduler_stay_alive_workers')).to.equal(0);
  });

  it('restarts after the base delay again once a run lasted the stable period', async () => {
    const [id] = await insertSchedulers([givenStayAlive({exit_code: '0'})]);
    const {supervisor: s, logs} = supervisor('a', {stableMs: 0});
    await s.reconcile();
    await until(() => startsOf(logs, id).length >= 4, 'four starts');
    expect(
      logs
        .find('Stay-alive worker restart scheduled')
        .slice(0, 3)
        .map(r => r.delay_ms),
    ).to.deepEqual([40, 40, 40]);
  });

  it('resets the delay when the supervisor clock says a run lasted the stable period', async () => {
    // The clock is injected: each run takes 10 ms by it, except the third,
    // which "lasts" a minute, without the test waiting for one.
    const readings = [0, 10, 1000, 1010, 2000, 62_000, 63_000, 63_010];
    const logs = new LogCapture();
    const worker = new SupervisedWorker(
      {
        schedulerId: 7,
        executable: path.join(CONFIG.workersDir, 'sample-worker'),
        args: ['exit_code=0', 'scheduler_id=7'],
        env: CONFIG.childEnv,
      },
      {
        backoff: {baseMs: 40, maxMs: 1000, stableMs: 60_000},
        stopGraceMs: 1000,
        timers: {...REAL_TIMERS, now: () => readings.shift() ?? 100_000},
        logger: logs.logger,
      },
    );
    try {
      worker.start();
      await until(
        () => logs.find('Stay-alive worker restart scheduled').length >= 4,
        'four exits',
      );
    } finally {
      await worker.stop();
    }
    expect(
      logs
        .find('Stay-alive worker exited')
        .map(r => r.ran_ms)
        .slice(0, 4),
    ).to.deepEqual([10, 10, 60_000, 10]);
    expect(
      logs
        .find('Stay-alive worker restart scheduled')
        .map(r => r.delay_ms)
        .slice(0, 4),
    ).to.deepEqual([40, 80, 40, 80]);
  });

  it('stops the worker of a disabled and of a deleted scheduler at the next reconciliation', async () => {
    const [kept, disabled, deleted] = await insertSchedulers([
      givenStayAlive(),
      givenStayAlive(),
      givenStayAlive(),
    ]);
    const {supervisor: s, logs} = supervisor('a');
    await s.reconcile();
    const pids = new Map(
      startsOf(logs).map(r => [r.scheduler_id as number, Number(r.child_pid)]),
    );
    await sql('UPDATE scheduler SET status = false WHERE id = $1', [disabled]);
    await sql('DELETE FROM scheduler WHERE id = $1', [deleted]);
    await s.reconcile();
    expect(s.runningSchedulerIds()).to.deepEqual([kept]);
    expect(isAlive(pids.get(disabled)!)).to.be.false();
    expect(isAlive(pids.get(deleted)!)).to.be.false();
    expect(isAlive(pids.get(kept)!)).to.be.true();
    expect(
      logs
        .find('Stopping stay-alive worker')
        .map(r => [r.scheduler_id, r.reason]),
    ).to.deepEqual([
      [disabled, 'scheduler inactive'],
      [deleted, 'scheduler inactive'],
    ]);
    expect(
      logs
        .find('Stay-alive worker stopped')
        .map(r => r.scheduler_id)
        .sort(),
    ).to.deepEqual([disabled, deleted]);
    // Stopped on purpose: no restart.
    expect(logs.find('Stay-alive worker restart scheduled')).to.have.length(0);
  });

  it('starts a newly created scheduler and restarts a changed one within the reconcile interval', async () => {
    const {supervisor: s, logs} = supervisor('a', {reconcileMs: 150});
    s.start();
    await until(() => s.lastReconciledAt !== undefined, 'first round');
    const [created] = await insertSchedulers([givenStayAlive()]);
    await until(
      () => s.runningSchedulerIds().includes(created),
      'the new scheduler runs',
      3000,
    );
    const firstPid = Number(startsOf(logs, created)[0].child_pid);
    await sql(`UPDATE scheduler SET params = $1 WHERE id = $2`, [
      {...LONG_RUNNING, mode: 'changed'},
      created,
    ]);
    await until(
      () => startsOf(logs, created).length === 2,
      'restart with the new params',
      3000,
    );
    expect(isAlive(firstPid)).to.be.false();
    expect(logs.find('Stopping stay-alive worker')[0]).to.containDeep({
      scheduler_id: created,
      reason: 'scheduler changed',
    });
    await until(
      () =>
        logs
          .find('Stay-alive worker output')
          .some(r => String(r.line).includes('"mode":"changed"')),
      'the new arguments',
    );
  });

  it('two supervisors never run the same scheduler twice, and one takes over when the other stops', async () => {
    const ids = await insertSchedulers([
      givenStayAlive(),
      givenStayAlive(),
      givenStayAlive(),
      givenStayAlive(),
    ]);
    const a = supervisor('a');
    const b = supervisor('b');
    for (let round = 0; round < 3; round++) {
      await Promise.all([a.supervisor.reconcile(), b.supervisor.reconcile()]);
      const ofA = a.supervisor.runningSchedulerIds();
      const ofB = b.supervisor.runningSchedulerIds();
      expect(ofA.filter(id => ofB.includes(id))).to.deepEqual([]);
      expect([...ofA, ...ofB].sort((x, y) => x - y)).to.deepEqual(ids);
    }
    for (const id of ids) {
      expect(
        startsOf(a.logs, id).length + startsOf(b.logs, id).length,
      ).to.equal(1);
    }
    const fromA = a.supervisor.runningSchedulerIds();
    await a.stop();
    await b.supervisor.reconcile();
    expect(b.supervisor.runningSchedulerIds()).to.deepEqual(ids);
    for (const id of fromA) expect(startsOf(b.logs, id)).to.have.length(1);
  });

  it('stops its workers when its lock connection dies, so that another supervisor can take them over', async () => {
    const ids = await insertSchedulers([givenStayAlive(), givenStayAlive()]);
    const a = supervisor('a');
    const b = supervisor('b');
    await a.supervisor.reconcile();
    await b.supervisor.reconcile();
    expect(a.supervisor.runningSchedulerIds()).to.deepEqual(ids);
    expect(b.supervisor.runningSchedulerIds()).to.deepEqual([]);
    const pids = startsOf(a.logs).map(r => Number(r.child_pid));

    await sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = $1`,
      [`stay-alive ${a.name}`],
    );
    await until(
      () => a.supervisor.runningSchedulerIds().length === 0,
      'A stops its workers',
    );
    expect(pids.some(isAlive)).to.be.false();
    expect(a.logs.find('Stay-alive lock connection lost')).to.have.length(1);
    expect(a.logs.find('Stay-alive lock connection lost')[0]).to.containDeep({
      level: 'error',
    });

    await b.supervisor.reconcile();
    expect(b.supervisor.runningSchedulerIds()).to.deepEqual(ids);
    // A reconnects, but the schedulers are B's now.
    await a.supervisor.reconcile();
    expect(a.supervisor.runningSchedulerIds()).to.deepEqual([]);
  });

  it('logs a worker command that leads out of WORKERS_DIR once and runs nothing for it', async () => {
    // A link inside the folder that leads out of it, in a folder of this run.
    const dir = await mkdtemp(path.join(tmpdir(), 'stay-alive-workers-'));
    try {
      await symlink('/bin/sleep', path.join(dir, 'escape'));
      await sql(
        `INSERT INTO worker (id, name, command) VALUES (90, 'escape', 'escape')`,
      );
      const [id] = await insertSchedulers([givenStayAlive(LONG_RUNNING, 90)]);
      const {supervisor: s, logs} = supervisor('a', {}, dir);
      await s.reconcile();
      await s.reconcile();
      expect(s.runningSchedulerIds()).to.deepEqual([]);
      const rejected = logs.find('Stay-alive worker command rejected');
      expect(rejected).to.have.length(1);
      expect(rejected[0]).to.containDeep({
        level: 'error',
        scheduler_id: id,
        worker_id: 90,
      });
      expect(String(rejected[0].problem)).to.match(/leads out/);
    } finally {
      await rm(dir, {recursive: true, force: true});
    }
  });

  it('keeps retrying, with backoff, a worker whose executable is missing', async () => {
    await sql(
      `INSERT INTO worker (id, name, command) VALUES (91, 'gone', 'no-such-worker')`,
    );
    const [id] = await insertSchedulers([givenStayAlive(LONG_RUNNING, 91)]);
    const {supervisor: s, logs} = supervisor('a');
    await s.reconcile();
    await until(
      () => logs.find('Stay-alive worker could not start').length >= 3,
      'three attempts',
    );
    const failures: LogRecord[] = logs.find(
      'Stay-alive worker could not start',
    );
    expect(failures[0]).to.containDeep({level: 'warn', scheduler_id: id});
    expect(String(failures[0].error)).to.match(/ENOENT/);
    expect(
      logs
        .find('Stay-alive worker restart scheduled')
        .slice(0, 3)
        .map(r => r.delay_ms),
    ).to.deepEqual([40, 80, 160]);
  });

  it('as APP_MODE=stay-alive, stops its workers on SIGTERM and exits 0', async () => {
    const ids = await insertSchedulers([givenStayAlive(), givenStayAlive()]);
    const service = startService({
      APP_MODE: 'stay-alive',
      STAY_ALIVE_RECONCILE_MS: '200',
    });
    await until(
      () =>
        service.records().filter(r => r.msg === 'Stay-alive worker started')
          .length === 2,
      'two workers started',
    );
    const started = service
      .records()
      .filter(r => r.msg === 'Stay-alive worker started');
    expect(started.map(r => r.scheduler_id).sort()).to.deepEqual(ids);
    const pids = started.map(r => Number(r.child_pid));
    expect(pids.every(isAlive)).to.be.true();
    service.child.kill('SIGTERM');
    expect((await service.exited()).code).to.equal(0);
    expect(pids.some(isAlive)).to.be.false();
    const messages = service.records().map(r => r.msg);
    expect(
      messages.filter(m => m === 'Stay-alive worker stopped'),
    ).to.have.length(2);
    expect(messages).to.containEql('Shutdown complete');
    expect(messages).to.not.containEql('Stay-alive worker restart scheduled');
  });
});
