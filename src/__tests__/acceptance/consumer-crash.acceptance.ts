import {expect} from '@loopback/testlab';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue} from '../fixtures/test-broker';
import {eventually, publishTask} from '../fixtures/test-consumer';
import {sql} from '../fixtures/test-database';
import {givenProbeWorker} from '../fixtures/probe-worker';
import {ServiceProcess, startService} from '../fixtures/service-process';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

/**
 * A real `APP_MODE=worker` process is SIGKILLed in the middle of a task,
 * either with its whole process group (a container stop) or alone (kill -9,
 * where the kernel's parent-death signal must take its worker down too).
 */
describe('consumer process killed mid-task', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  const services: ServiceProcess[] = [];
  const probe = givenProbeWorker();
  afterEach(async () => {
    for (const service of services.splice(0)) {
      if (
        service.child.exitCode === null &&
        service.child.signalCode === null
      ) {
        process.kill(-service.child.pid!, 'SIGKILL');
        await service.exited();
      }
    }
  });

  async function givenConsumerProcess(): Promise<ServiceProcess> {
    const service = startService(
      {APP_MODE: 'worker', WORKERS_DIR: probe.workersDir()},
      {ownProcessGroup: true},
    );
    services.push(service);
    await service.waitForLog('Consuming tasks');
    return service;
  }

  const kills: Array<[string, (pid: number) => void]> = [
    // A container stop or a cgroup kill: the whole group dies.
    ['its process group', pid => process.kill(-pid, 'SIGKILL')],
    // kill -9 of the consumer alone: its worker must not live on as an orphan.
    ['the consumer process alone', pid => process.kill(pid, 'SIGKILL')],
  ];
  for (const [what, kill] of kills) {
    it(`SIGKILL of ${what}: another consumer completes the task once`, async () => {
      const [scheduler] = await sql<{id: number}>(
        `INSERT INTO scheduler (description, schedule, worker_id)
         VALUES ('crash', '* * * * *', 1) RETURNING id`,
      );
      const [execution] = await sql<{id: string}>(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
         VALUES ($1, 'cron-2026-11-21-10-00', 'test', 'published', now()) RETURNING id`,
        [scheduler.id],
      );
      const executionId = Number(execution.id);
      const ledger = async () =>
        (
          await sql(
            `SELECT status, attempts FROM scheduler_execution WHERE id = $1`,
            [executionId],
          )
        )[0];

      const first = await givenConsumerProcess();
      await publishTask(
        {
          type: 'worker',
          id: 1,
          scheduler_id: scheduler.id,
          params_scheduler: '{}',
        },
        {
          'x-execution-id': executionId,
          'x-execution-key': 'cron-2026-11-21-10-00',
        },
      );
      await eventually(
        () => (probe.lines().includes('start') ? true : undefined),
        10_000,
        'the first attempt to start',
      );
      kill(first.child.pid!);
      expect((await first.exited()).signal).to.equal('SIGKILL');
      expect(await ledger()).to.containDeep({status: 'running', attempts: 1});

      // The killed run's worker (sleeping 1.5 s) must not finish on its own.
      await new Promise(resolve => setTimeout(resolve, 2000));
      expect(probe.lines()).to.deepEqual(['start']);

      const second = await givenConsumerProcess();
      await eventually(
        async () =>
          (await ledger()).status === 'succeeded' ? true : undefined,
        15_000,
        'the redelivered run to succeed',
      );
      expect(await ledger()).to.containDeep({status: 'succeeded', attempts: 2});
      // Killed before "done", then run once more to the end: one side effect.
      expect(probe.lines()).to.deepEqual(['start', 'start', 'done']);
      const started = second
        .records()
        .filter(record => record.msg === 'Task started');
      expect(started).to.have.length(1);
      // A redelivery is not a retry: same attempt number, flagged in the log.
      expect(started[0]).to.containDeep({
        scheduler_id: scheduler.id,
        attempt: 1,
        redelivered: true,
      });
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);

      second.child.kill('SIGTERM');
      expect((await second.exited()).code).to.equal(0);
    });
  }
});
