import {expect} from '@loopback/testlab';
import {existsSync, readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {resetBroker} from '../fixtures/test-broker';
import {eventually, givenWorkersDir} from '../fixtures/test-consumer';
import {
  givenCatalog,
  sql,
  truncateAll,
  untilLastCrashOlderThan,
} from '../fixtures/test-database';
import {ServiceProcess, startService} from '../fixtures/service-process';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';
import {RECORDING_WORKER} from '../fixtures/lost-runs';

/**
 * The fleet chaos profile's finding (RELIABILITY.md, `.ci/run` at 2f8a607):
 * a retry the broker lost left its run `retrying` for ever. Here the retry
 * is lost outright (it was never in any queue) and the service, as a user
 * runs it, must notice and run the task's next attempt once, by itself.
 */
describe('a run whose retry the broker lost', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let workersDir: string;
  let service: ServiceProcess | undefined;
  const runsFile = () => path.join(workersDir, 'runs.out');

  before(async () => {
    // A run idle since before a crash is failed, not sent again.
    await untilLastCrashOlderThan(70);
    workersDir = givenWorkersDir({
      records: RECORDING_WORKER,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'records' WHERE id = 1`);
  });
  afterEach(async () => {
    if (service && service.child.exitCode === null) {
      service.child.kill('SIGTERM');
      await service.exited();
    }
    service = undefined;
  });

  it('is sent again after the grace and its next attempt runs once', async () => {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('lost retry', '0 0 1 1 *', 1) RETURNING id`,
    );
    // Its first attempt failed a minute ago; the retry never came.
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at,
          started_at, finished_at, attempts, last_retry_count, last_error)
       VALUES ($1, 'cron-2026-11-21-10-00', 'test', 'retrying', now() - interval '1 minute',
               now() - interval '1 minute', now() - interval '1 minute',
               now() - interval '1 minute', 1, 0, 'exit code 1')
       RETURNING id`,
      [scheduler.id],
    );
    const executionId = Number(execution.id);

    service = startService({
      APP_MODE: 'all',
      WORKERS_DIR: workersDir,
      CRON_LOST_RUN_GRACE_MS: '2000',
    });

    const run = await eventually(
      async () => {
        const [row] = await sql(
          `SELECT status, attempts, resent FROM scheduler_execution WHERE id = $1`,
          [executionId],
        );
        return row.status === 'succeeded' ? row : undefined;
      },
      30_000,
      'the lost run to be sent again and succeed',
    );
    expect(run).to.containDeep({attempts: 2, resent: 1});
    expect(readFileSync(runsFile(), 'utf8')).to.equal(
      'cron-2026-11-21-10-00 2\n',
    );
    const sent = service
      .records()
      .filter(r => r.msg === 'Run lost by the broker; sent again');
    expect(sent).to.have.length(1);
    expect(sent[0]).to.containDeep({
      execution_id: executionId,
      retry_count: 1,
      resent: 1,
    });
    // Nothing else ran it in the meantime.
    await new Promise(resolve => setTimeout(resolve, 3000));
    expect(existsSync(runsFile())).to.be.true();
    expect(readFileSync(runsFile(), 'utf8')).to.equal(
      'cron-2026-11-21-10-00 2\n',
    );
  });

  it('refuses a grace the configuration cannot mean', async () => {
    for (const bad of ['0', '999', 'soon', '-5', '604800001']) {
      service = startService({
        APP_MODE: 'scheduler',
        CRON_LOST_RUN_GRACE_MS: bad,
      });
      const {code} = await service.exited();
      expect(code).to.not.equal(0);
      expect(service.stderr.join('\n')).to.match(/CRON_LOST_RUN_GRACE_MS/);
    }
  });
});
