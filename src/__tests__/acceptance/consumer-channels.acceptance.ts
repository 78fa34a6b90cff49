import {expect} from '@loopback/testlab';
import {eventually, publishTask} from '../fixtures/test-consumer';
import {sql} from '../fixtures/test-database';
import {givenProbeWorker} from '../fixtures/probe-worker';
import {ServiceProcess, startService} from '../fixtures/service-process';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

/**
 * CRON_WORKER_CHANNELS: one worker process with several consumers of
 * cron_scheduler, each holding one task at a time (prefetch 1).
 */
describe('consumer channels of one worker process', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let service: ServiceProcess | undefined;
  const probe = givenProbeWorker();
  afterEach(async () => {
    if (service && service.child.exitCode === null) {
      service.child.kill('SIGTERM');
      await service.exited();
    }
    service = undefined;
  });

  async function givenRuns(count: number): Promise<number[]> {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('channels', '* * * * *', 1) RETURNING id`,
    );
    const ids: number[] = [];
    for (let n = 0; n < count; n++) {
      const key = `cron-2026-11-24-10-0${n}`;
      const [execution] = await sql<{id: string}>(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
         VALUES ($1, $2, 'test', 'published', now()) RETURNING id`,
        [scheduler.id, key],
      );
      ids.push(Number(execution.id));
      await publishTask(
        {
          type: 'worker',
          id: 1,
          scheduler_id: scheduler.id,
          params_scheduler: '{}',
        },
        {'x-execution-id': Number(execution.id), 'x-execution-key': key},
      );
    }
    return ids;
  }

  async function allSucceeded(ids: number[]): Promise<true | undefined> {
    const rows = await sql<{n: number}>(
      `SELECT count(*)::int AS n FROM scheduler_execution
        WHERE id = ANY($1) AND status = 'succeeded'`,
      [ids],
    );
    return rows[0].n === ids.length ? true : undefined;
  }

  async function givenWorkerProcess(channels?: number): Promise<void> {
    service = startService({
      APP_MODE: 'worker',
      WORKERS_DIR: probe.workersDir(),
      ...(channels === undefined ? {} : {CRON_WORKER_CHANNELS: `${channels}`}),
    });
    await service.waitForLog('cron-worker started');
  }

  it('runs two tasks at once with CRON_WORKER_CHANNELS=2, each run once', async () => {
    const ids = await givenRuns(2);
    await givenWorkerProcess(2);
    await eventually(() => allSucceeded(ids), 15_000, 'both runs to succeed');
    // Both started before either finished: two channels, one task each.
    expect(probe.lines()).to.deepEqual(['start', 'start', 'done', 'done']);
    const started = service!
      .records()
      .filter(r => r.msg === 'cron-worker started');
    expect(started[0]).to.containDeep({channels: 2, prefetch: 1});
  });

  it('runs one task at a time by default', async () => {
    const ids = await givenRuns(2);
    await givenWorkerProcess();
    await eventually(() => allSucceeded(ids), 15_000, 'both runs to succeed');
    expect(probe.lines()).to.deepEqual(['start', 'done', 'start', 'done']);
  });

  it('refuses CRON_WORKER_CHANNELS=0 at start with a clear message', async () => {
    service = startService({APP_MODE: 'worker', CRON_WORKER_CHANNELS: '0'});
    const {code} = await service.exited();
    expect(code).to.not.equal(0);
    expect(service.stderr.join('\n') + service.stdout.join('\n')).to.match(
      /CRON_WORKER_CHANNELS must be an integer between 1 and 32/,
    );
  });
});
