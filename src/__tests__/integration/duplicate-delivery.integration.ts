import {expect} from '@loopback/testlab';
import {existsSync, readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TestConsumer,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/**
 * Found by the chaos suite (full profile, seed 7): a broker cut lost the
 * confirms of publishes the broker had in fact taken; the sweeper rightly
 * sent those runs again, and for a failing run both copies ran through all
 * their attempts (8 runs of the worker, two failed_task rows). The ledger
 * only recognised duplicates of succeeded runs. Now it also acknowledges
 * without running a copy of a run that already failed, and a copy of an
 * attempt that already ran while its retry is pending.
 */
describe('consumer: duplicate deliveries of one run', () => {
  let workersDir: string;
  let consumer: TestConsumer | undefined;
  const attemptsFile = () => path.join(workersDir, 'fails.out');
  const workerRuns = () =>
    existsSync(attemptsFile())
      ? readFileSync(attemptsFile(), 'utf8').split('\n').filter(Boolean)
      : [];

  before(() => {
    workersDir = givenWorkersDir({
      fails: `#!/bin/sh\necho "$TASK_EXECUTION_KEY $TASK_ATTEMPT" >> "$(dirname "$0")/fails.out"\nexit 1\n`,
      succeeds: `#!/bin/sh\necho "$TASK_EXECUTION_KEY $TASK_ATTEMPT" >> "$(dirname "$0")/fails.out"\n`,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    rmSync(attemptsFile(), {force: true});
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'fails' WHERE id = 1`);
    await sql(`UPDATE worker SET command = 'succeeds' WHERE id = 2`);
    consumer = await givenConsumer({workersDir});
  });
  afterEach(async () => {
    await consumer?.stop(100);
    consumer = undefined;
  });

  /** A claimed and published run of worker `workerId`, and its message. */
  async function givenRun(workerId: number, status = 'published') {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '* * * * *', $1) RETURNING id`,
      [workerId],
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, published_at, attempts)
       VALUES ($1, 'cron-2026-11-21-10-00', 'test', $2, now(), $3) RETURNING id`,
      [scheduler.id, status, status === 'running' ? 1 : 0],
    );
    const executionId = Number(execution.id);
    const publish = () =>
      publishTask(
        {
          type: 'worker',
          id: workerId,
          scheduler_id: scheduler.id,
          params_scheduler: '{}',
        },
        {
          'x-execution-id': executionId,
          'x-execution-key': 'cron-2026-11-21-10-00',
        },
      );
    return {executionId, publish};
  }

  const ledger = async (id: number) =>
    (await sql(`SELECT * FROM scheduler_execution WHERE id = $1`, [id]))[0];
  const failedTasks = () => sql(`SELECT * FROM failed_task`);
  const finished = (id: number, status: string) =>
    eventually(
      async () =>
        (await ledger(id)).status === status &&
        (status !== 'failed' || (await failedTasks()).length > 0),
      15_000,
      `run ${id} ${status}`,
    );

  it('runs a failing run once through its retries although its message came twice', async () => {
    const run = await givenRun(1);
    await run.publish();
    await run.publish();
    await finished(run.executionId, 'failed');
    // Let a second chain, if any, show itself.
    await new Promise(resolve => setTimeout(resolve, 2000));

    expect(workerRuns()).to.deepEqual([
      'cron-2026-11-21-10-00 1',
      'cron-2026-11-21-10-00 2',
      'cron-2026-11-21-10-00 3',
      'cron-2026-11-21-10-00 4',
    ]);
    expect(await failedTasks()).to.have.length(1);
    expect(await ledger(run.executionId)).to.containDeep({
      status: 'failed',
      attempts: 4,
    });
    expect(
      consumer!.logs.find(
        'Task attempt already ran and its retry is pending; duplicate acknowledged without running',
      ),
    ).to.have.length(1);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('acknowledges a copy of a run that already failed without running it', async () => {
    const run = await givenRun(1);
    await run.publish();
    await finished(run.executionId, 'failed');
    await run.publish();
    await eventually(
      () =>
        consumer!.logs.find(
          'Task already failed after its retries; duplicate acknowledged without running',
        ).length === 1 || undefined,
    );
    expect(workerRuns()).to.have.length(4);
    expect(await failedTasks()).to.have.length(1);
    expect((await ledger(run.executionId)).status).to.equal('failed');
  });

  it('still runs a redelivered run whose consumer died while running it', async () => {
    const run = await givenRun(2, 'running');
    await run.publish();
    await finished(run.executionId, 'succeeded');
    expect(workerRuns()).to.deepEqual(['cron-2026-11-21-10-00 1']);
    expect((await ledger(run.executionId)).attempts).to.equal(2);
  });
});
