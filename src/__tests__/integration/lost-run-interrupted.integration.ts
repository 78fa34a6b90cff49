import {expect} from '@loopback/testlab';
import {rmSync} from 'node:fs';
import path from 'node:path';
import {lostRunAfterMs} from '../../producer/lost-run-sweep';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TEST_RETRY,
  TestConsumer,
} from '../fixtures/test-consumer';
import {
  givenCatalog,
  sql,
  truncateAll,
  untilLastCrashOlderThan,
} from '../fixtures/test-database';
import {givenProducer, TestProducer} from '../fixtures/test-producer';
import {LOST_RUN_KEY, recordedRuns, sweepAs} from '../fixtures/lost-runs';

const KEY = LOST_RUN_KEY;

/**
 * Found by the second hostile review of the lost-run sweep: RunLedger's
 * interrupted mark set a run back to `published` unconditionally. When a
 * consumer's channel closes mid-task, the broker redelivers the message at
 * once and another consumer starts it; the first marks its aborted attempt
 * interrupted only after its child exited (the kill grace), after the
 * second's start. The run read `published` while it ran, and once idle for
 * the cut-off (a grace shorter than the task) the sweep sent a copy that
 * ran beside it. The mark now undoes only its own start.
 */
describe('lost-run sweep and a stale "interrupted" mark', function (this: Mocha.Suite) {
  this.timeout(60_000);
  let workersDir: string;
  let p: TestProducer;
  const consumers: TestConsumer[] = [];
  const runsFile = () => path.join(workersDir, 'runs.out');
  const lines = () => recordedRuns(workersDir);

  before(async () => {
    workersDir = givenWorkersDir({
      // A worker that finishes its step on SIGTERM (killed after the grace).
      long: `#!/bin/sh\necho "start $$" >> "$(dirname "$0")/runs.out"\ntrap 'sleep 2; exit 143' TERM\nsleep 6 &\nwait\necho "end $$" >> "$(dirname "$0")/runs.out"\n`,
    });
    await untilLastCrashOlderThan(30);
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    rmSync(runsFile(), {force: true});
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'long' WHERE id = 1`);
    p = await givenProducer();
  });
  afterEach(async () => {
    for (const c of consumers.splice(0)) await c.stop(100);
    await p.stop();
  });

  it('never sends a copy beside the attempt that is running (a grace shorter than the task)', async () => {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '0 0 1 1 *', 1) RETURNING id`,
    );
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at)
       VALUES ($1, $2, 'test', 'published', now(), now()) RETURNING id`,
      [scheduler.id, KEY],
    );
    const id = Number(row.id);
    const c1 = await givenConsumer({workersDir, taskTimeoutMs: 30_000});
    consumers.push(c1);
    await publishTask(
      {
        type: 'worker',
        id: 1,
        scheduler_id: scheduler.id,
        params_scheduler: '{}',
      },
      {'x-execution-id': id, 'x-execution-key': KEY},
    );
    await eventually(() => lines().length === 1, 10_000, 'c1 to start it');
    const c2 = await givenConsumer({workersDir, taskTimeoutMs: 30_000});
    consumers.push(c2);
    // c1's channel closes mid-task: the broker hands the message to c2.
    await c1.tasks.subscription.channel!.close();
    await eventually(
      () => c2.logs.find('Task started').length === 1,
      10_000,
      'c2 to start the redelivery',
    );
    await eventually(
      () =>
        c1.logs.find(
          'Task interrupted: its channel closed; the broker redelivers it',
        ).length === 1,
      10_000,
      'c1 to mark its attempt interrupted',
    );
    // c1's mark undoes only its own start: the run stays c2's, running.
    const [state] = await sql(
      `SELECT status, attempts FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    expect(state).to.containDeep({status: 'running', attempts: 2});

    // A grace shorter than the task: the sweep passes 2 s later.
    const lostAfterMs = lostRunAfterMs(TEST_RETRY, 1000);
    await new Promise(resolve => setTimeout(resolve, lostAfterMs + 200));
    const result = await sweepAs(p, {lostAfterMs});
    await eventually(
      async () =>
        (
          await sql<{status: string}>(
            `SELECT status FROM scheduler_execution WHERE id = $1`,
            [id],
          )
        )[0].status === 'succeeded',
      20_000,
      'the run to end',
    );
    await new Promise(resolve => setTimeout(resolve, 7000));
    const ends = lines().filter(line => line.startsWith('end'));
    expect(result.resent).to.equal(0);
    expect(ends).to.have.length(1);
  });
});
