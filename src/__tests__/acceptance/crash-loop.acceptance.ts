import {expect} from '@loopback/testlab';
import {readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {CRASH_LOOP_REASON} from '../../consumer/crash-loop-guard';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenWorkersDir,
  publishTask,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {ServiceProcess, startService} from '../fixtures/service-process';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

/**
 * A task that kills whichever consumer runs it (as a worker that exhausts
 * the consumer's memory would) must not crash-loop the fleet.
 */
describe('a task that kills its consumer every time', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let workersDir: string;
  const services: ServiceProcess[] = [];
  const probe = () => path.join(workersDir, 'killer.out');
  const starts = () => {
    try {
      return readFileSync(probe(), 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };

  before(() => {
    workersDir = givenWorkersDir({
      // setpriv execs the worker, so its parent is the consumer itself.
      killer: `#!/bin/sh\necho start >> "$(dirname "$0")/killer.out"\nkill -9 $PPID\nsleep 5\n`,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    rmSync(probe(), {force: true});
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'killer' WHERE id = 1`);
  });
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
      {APP_MODE: 'worker', WORKERS_DIR: workersDir},
      {ownProcessGroup: true},
    );
    services.push(service);
    await service.waitForLog('Consuming tasks');
    return service;
  }

  it('is parked with its reason after two starts without an outcome, not delivered a third time', async () => {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('crash loop', '* * * * *', 1) RETURNING id`,
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, 'cron-2026-11-21-10-00', 'test', 'published', now()) RETURNING id`,
      [scheduler.id],
    );
    const executionId = Number(execution.id);
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
    for (const start of [1, 2]) {
      const consumer = await givenConsumerProcess();
      expect((await consumer.exited()).signal).to.equal('SIGKILL');
      expect(starts()).to.equal(start);
    }

    const third = await givenConsumerProcess();
    const [parked] = await eventually(
      async () => {
        const rows = await sql(`SELECT * FROM failed_task`);
        return rows.length ? rows : undefined;
      },
      15_000,
      'the parked task',
    );
    expect(parked.failed_reason).to.equal(CRASH_LOOP_REASON);
    expect(Number(parked.execution_id)).to.equal(executionId);
    expect(starts()).to.equal(2);
    const [row] = await sql(
      `SELECT status, last_error FROM scheduler_execution WHERE id = $1`,
      [executionId],
    );
    expect(row).to.containDeep({
      status: 'failed',
      last_error: CRASH_LOOP_REASON,
    });
    expect(third.child.exitCode).to.equal(null);
  });
});
