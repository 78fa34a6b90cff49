import {expect} from '@loopback/testlab';
import {readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {startService, ServiceProcess} from '../fixtures/service-process';
import {eventually, givenWorkersDir} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {insertSchedulers} from '../fixtures/test-producer';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('stay-alive supervisor killed with SIGKILL', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let workersDir: string;
  let service: ServiceProcess | undefined;
  let workerPid: number | undefined;

  before(() => {
    workersDir = givenWorkersDir({
      // Records its pid, then keeps it (exec) for a minute.
      forever: `#!/bin/sh\necho $$ > "$(dirname "$0")/forever.pid"\nexec sleep 60\n`,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await sql(`UPDATE worker SET command = 'forever' WHERE id = 1`);
  });
  afterEach(async () => {
    if (service?.child.exitCode === null && !service.child.signalCode) {
      service.child.kill('SIGKILL');
      await service.exited();
    }
    if (workerPid !== undefined && alive(workerPid)) {
      process.kill(workerPid, 'SIGKILL');
    }
  });

  it('takes its running worker down with it (no orphan)', async () => {
    await insertSchedulers([{stay_alive: true, worker_id: 1, schedule: null}]);
    service = startService({
      APP_MODE: 'stay-alive',
      WORKERS_DIR: workersDir,
      STAY_ALIVE_RECONCILE_MS: '200',
    });
    workerPid = await eventually(
      () => {
        try {
          const pid = Number(
            readFileSync(path.join(workersDir, 'forever.pid'), 'utf8'),
          );
          return pid > 0 ? pid : undefined;
        } catch {
          return undefined;
        }
      },
      15_000,
      'the stay-alive worker to start',
    );
    expect(alive(workerPid)).to.be.true();

    service.child.kill('SIGKILL');
    await service.exited();
    await eventually(
      () => (alive(workerPid!) ? undefined : true),
      5_000,
      'the worker to die with its supervisor',
    );
  });
});
