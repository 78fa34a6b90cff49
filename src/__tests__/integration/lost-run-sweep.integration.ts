import {expect} from '@loopback/testlab';
import {existsSync, readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {isCrashLooping} from '../../consumer/crash-loop-guard';
import {
  LOST_RUN_RESENDS,
  lostRunAfterMs,
  LostRunSweepResult,
  sweepLostRuns,
} from '../../producer/lost-run-sweep';
import {LostRunTimer} from '../../producer/lost-run-timer';
import {TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TestConsumer,
  TEST_RETRY,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {givenProducer, TestProducer} from '../fixtures/test-producer';

const KEY = 'cron-2026-11-21-10-00';
/** What the tests call lost: no activity for a minute. */
const LOST_AFTER_MS = 60_000;

/**
 * Found by the fleet chaos profile (`.ci/run` at 2f8a607, RELIABILITY.md):
 * three retries confirmed into a delay queue never came back after the task
 * queue's leader stopped, and their runs stayed `retrying` for ever. Nothing
 * sent again a run left published or retrying with no message behind it.
 * These tests lose the message by purging the queue (or never publishing
 * it), age the run's times past the cut-off, and check that the lost-run
 * sweep sends it again once, that the task then runs once even when the
 * "lost" message turns up after all, and that a run lost too often fails
 * where operators look for failures.
 */
describe('lost-run sweep: runs whose message the broker lost', () => {
  let workersDir: string;
  let p: TestProducer;
  let consumer: TestConsumer | undefined;
  const runsFile = () => path.join(workersDir, 'runs.out');
  const workerRuns = () =>
    existsSync(runsFile())
      ? readFileSync(runsFile(), 'utf8').split('\n').filter(Boolean)
      : [];

  before(() => {
    workersDir = givenWorkersDir({
      records: `#!/bin/sh\necho "$TASK_EXECUTION_KEY $TASK_ATTEMPT" >> "$(dirname "$0")/runs.out"\n`,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    rmSync(runsFile(), {force: true});
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'records' WHERE id = 1`);
    p = await givenProducer();
  });
  afterEach(async () => {
    await consumer?.stop(100);
    consumer = undefined;
    await p.stop();
  });

  interface RunState {
    status: string;
    attempts?: number;
    lastRetryCount?: number | null;
    /** How long ago its last activity was (seconds). */
    idleSeconds?: number;
    resent?: number;
    stayAlive?: boolean;
  }

  /** A run of worker 1 in the given state, its message nowhere. */
  async function givenRun(state: RunState): Promise<number> {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id, stay_alive)
       VALUES ('t', CASE WHEN $1 THEN NULL ELSE '* * * * *' END, 1, $1) RETURNING id`,
      [state.stayAlive ?? false],
    );
    const idle = `now() - make_interval(secs => ${state.idleSeconds ?? 3600})`;
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at,
          attempts, last_retry_count, started_at, finished_at, resent)
       VALUES ($1, $2, 'test', $3, ${idle}, ${idle}, $4, $5,
               CASE WHEN $4 > 0 THEN ${idle} END, CASE WHEN $4 > 0 THEN ${idle} END, $6)
       RETURNING id`,
      [
        scheduler.id,
        KEY,
        state.status,
        state.attempts ?? 0,
        state.lastRetryCount ?? null,
        state.resent ?? 0,
      ],
    );
    return Number(row.id);
  }

  const ledger = async (id: number) =>
    (await sql(`SELECT * FROM scheduler_execution WHERE id = $1`, [id]))[0];

  const sweep = (
    overrides: Partial<Parameters<typeof sweepLostRuns>[3]> = {},
  ): Promise<LostRunSweepResult> =>
    sweepLostRuns(p.pool, p.publisher, p.logs.logger, {
      lostAfterMs: LOST_AFTER_MS,
      workQueuesIdle: async () => true,
      ...overrides,
    });

  it('sends a retrying run again at the retry it was lost at, and it then runs once', async () => {
    const id = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });

    expect(await sweep()).to.deepEqual({resent: 1, failed: 0, deferred: 0});

    const [copy] = await drainQueue(TASK_QUEUE);
    expect(copy.properties.headers).to.containDeep({
      'x-execution-id': id,
      'x-execution-key': KEY,
      'x-retry-count': 1,
      'x-resent': 1,
    });
    // Its own deduplication key: the plugin must not drop it as a repeat.
    expect(copy.properties.headers?.['x-deduplication-header']).to.match(
      /:resent-1$/,
    );
    expect(JSON.parse(copy.content.toString())).to.containDeep({
      type: 'worker',
      id: 1,
    });
    const row = await ledger(id);
    expect(row).to.containDeep({status: 'retrying', resent: 1});
    expect(row.resent_at).to.be.instanceOf(Date);
    expect(row.status_reason).to.match(
      /^sent again \(1 of 3\): no sign of its message for 60 min$/,
    );
    expect(
      p.logs.find('Run lost by the broker; sent again', {
        execution_id: id,
        resent: 1,
        retry_count: 1,
      }),
    ).to.have.length(1);

    // The copy runs: the second attempt, once.
    consumer = await givenConsumer({workersDir});
    await publishTask(JSON.parse(copy.content.toString()), {
      ...copy.properties.headers,
    });
    await eventually(
      async () => (await ledger(id)).status === 'succeeded',
      15_000,
      'the copy to run',
    );
    expect(workerRuns()).to.deepEqual([`${KEY} 2`]);
    expect(await ledger(id)).to.containDeep({attempts: 2, resent: 1});
  });

  it('acknowledges the lost message without running it when it turns up after its copy was sent', async () => {
    const id = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    await sweep();
    const [copy] = await drainQueue(TASK_QUEUE);
    consumer = await givenConsumer({workersDir});
    // The original retry, not lost after all, arrives first: it must not run.
    const original = {
      'x-execution-id': id,
      'x-execution-key': KEY,
      'x-retry-count': 1,
    };
    await publishTask(JSON.parse(copy.content.toString()), original);
    await eventually(
      () =>
        consumer!.logs.find(
          'Message replaced by a copy the lost-run sweep sent; acknowledged without running',
        ).length === 1,
      10_000,
      'the original to be acknowledged as replaced',
    );
    expect(workerRuns()).to.deepEqual([]);
    expect(await ledger(id)).to.containDeep({status: 'retrying', attempts: 1});

    await publishTask(JSON.parse(copy.content.toString()), {
      ...copy.properties.headers,
    });
    await eventually(
      async () => (await ledger(id)).status === 'succeeded',
      15_000,
      'the copy to run',
    );
    // And once more, late: the run ended, so nothing runs.
    await publishTask(JSON.parse(copy.content.toString()), original);
    await eventually(
      () =>
        consumer!.logs.find(
          'Task already succeeded; redelivery acknowledged without running',
        ).length === 1,
      10_000,
      'the late original to be acknowledged',
    );
    expect(workerRuns()).to.deepEqual([`${KEY} 2`]);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('refuses a replaced message in a reminder, whose statement starts the run itself', async () => {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, published_at, resent)
       VALUES ($1, $2, 'test', 'published', now(), 1) RETURNING id`,
      [scheduler.id, KEY],
    );
    const id = Number(row.id);
    const body = {
      type: 'reminder',
      id: 1,
      scheduler_id: scheduler.id,
      params_scheduler: '{}',
    };
    consumer = await givenConsumer({workersDir});
    await publishTask(body, {'x-execution-id': id, 'x-execution-key': KEY});
    await eventually(
      () =>
        consumer!.logs.find(
          'Message replaced by a copy the lost-run sweep sent; acknowledged without running',
        ).length === 1,
      10_000,
      'the replaced reminder message to be acknowledged',
    );
    expect(await ledger(id)).to.containDeep({status: 'published', attempts: 0});
    await publishTask(body, {
      'x-execution-id': id,
      'x-execution-key': KEY,
      'x-resent': 1,
    });
    await eventually(
      async () => (await ledger(id)).status === 'succeeded',
      10_000,
      'the copy to run',
    );
    expect(await ledger(id)).to.containDeep({attempts: 1});
  });

  it('sends a published run again at the retry it was waiting for', async () => {
    const fresh = await givenRun({status: 'published'});
    // Requeued by a shutdown during its third attempt.
    const interrupted = await givenRun({
      status: 'published',
      attempts: 3,
      lastRetryCount: 2,
    });

    expect(await sweep()).to.containDeep({resent: 2});

    const retryCounts = new Map(
      (await drainQueue(TASK_QUEUE)).map(m => [
        m.properties.headers?.['x-execution-id'],
        m.properties.headers?.['x-retry-count'],
      ]),
    );
    expect(retryCounts.get(fresh)).to.equal(0);
    expect(retryCounts.get(interrupted)).to.equal(2);
  });

  it('leaves alone runs with recent activity, runs in other states and stay-alive runs', async () => {
    await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
      idleSeconds: 30,
    });
    await givenRun({status: 'published', idleSeconds: 30});
    for (const status of [
      'claimed',
      'running',
      'succeeded',
      'failed',
      'skipped',
    ]) {
      await givenRun({status, attempts: 1, lastRetryCount: 0});
    }
    await givenRun({status: 'published', stayAlive: true});

    expect(await sweep()).to.deepEqual({resent: 0, failed: 0, deferred: 0});
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    const [{changed}] = await sql<{changed: number}>(
      `SELECT count(*)::int AS changed FROM scheduler_execution WHERE resent > 0`,
    );
    expect(changed).to.equal(0);
  });

  it('waits while a work queue holds ready messages: the message may only be waiting', async () => {
    const id = await givenRun({status: 'published'});

    const result = await sweep({workQueuesIdle: async () => false});

    expect(result).to.deepEqual({resent: 0, failed: 0, deferred: 1});
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    expect(await ledger(id)).to.containDeep({resent: 0});
    expect(
      p.logs.find(
        'Runs without activity left alone: work queues hold ready messages',
        {runs: 1},
      ),
    ).to.have.length(1);
  });

  it('waits its whole time again after a copy: a second pass sends nothing', async () => {
    const id = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    await sweep();
    expect(await sweep()).to.deepEqual({resent: 0, failed: 0, deferred: 0});
    expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
    expect(await ledger(id)).to.containDeep({resent: 1});
  });

  it('counts nothing when the broker does not confirm the copy', async () => {
    const id = await givenRun({status: 'published'});
    await p.connection.stop();

    expect(await sweep()).to.deepEqual({resent: 0, failed: 0, deferred: 0});

    expect(await ledger(id)).to.containDeep({status: 'published', resent: 0});
    expect((await ledger(id)).resent_at).to.be.null();
  });

  it('fails a run lost after its last copy, and keeps it for re-drive with its owner told', async () => {
    const id = await givenRun({
      status: 'retrying',
      attempts: 2,
      lastRetryCount: 1,
      resent: LOST_RUN_RESENDS,
    });

    expect(await sweep()).to.deepEqual({resent: 0, failed: 1, deferred: 0});

    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    const row = await ledger(id);
    expect(row.status).to.equal('failed');
    expect(row.finished_at).to.be.instanceOf(Date);
    expect(row.last_error).to.match(
      /^lost: no sign of its message for 60 min after 3 copies sent again; given up$/,
    );
    const parked = await sql(`SELECT * FROM failed_task`);
    expect(parked).to.have.length(1);
    expect(parked[0]).to.containDeep({
      execution_id: String(id),
      type: 'worker',
      task_id: 1,
      retry_count: 2,
      failed_reason: row.last_error,
    });
    expect(await sql(`SELECT * FROM failure_notice_outbox`)).to.have.length(1);
    expect(
      p.logs.find('PERMANENTLY FAILED TASK', {
        component: 'lost-run-sweep',
        execution_id: id,
      }),
    ).to.have.length(1);
    // A second pass finds nothing more to do.
    expect(await sweep()).to.deepEqual({resent: 0, failed: 0, deferred: 0});
  });

  it('sends each run once when two producers sweep at the same time', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 40; i++)
      ids.push(await givenRun({status: 'published'}));
    const other = await givenProducer({}, 'other-producer');
    try {
      const results = await Promise.all([
        sweep({batchSize: 5}),
        sweepLostRuns(other.pool, other.publisher, other.logs.logger, {
          lostAfterMs: LOST_AFTER_MS,
          workQueuesIdle: async () => true,
          batchSize: 5,
        }),
      ]);
      expect(results[0].resent + results[1].resent).to.equal(40);
    } finally {
      await other.stop();
    }
    const messages = await drainQueue(TASK_QUEUE);
    expect(
      messages.map(m => m.properties.headers?.['x-execution-id']).sort(),
    ).to.deepEqual([...ids].sort());
    const [{sum}] = await sql<{sum: number}>(
      `SELECT sum(resent)::int AS sum FROM scheduler_execution`,
    );
    expect(sum).to.equal(40);
  });

  it('counts what it sent and failed in task_scheduler_sweeps_total', async () => {
    await givenRun({status: 'published'});
    await givenRun({status: 'published', resent: LOST_RUN_RESENDS});
    const timer = new LostRunTimer(
      p.pool,
      p.publisher,
      {
        lostAfterMs: LOST_AFTER_MS,
        workQueuesIdle: async () => true,
        intervalMs: 60_000,
      },
      p.logs.logger,
      p.metrics,
    );
    await timer.runOnce();
    const {body: text} = await p.metrics.text();
    expect(text).to.match(
      /task_scheduler_sweeps_total\{[^}]*result="resent_lost"[^}]*\} 1/,
    );
    expect(text).to.match(
      /task_scheduler_sweeps_total\{[^}]*result="failed_lost"[^}]*\} 1/,
    );
  });

  it('does not count a replaced redelivery towards the crash-loop guard', async () => {
    const id = await givenRun({
      status: 'running',
      attempts: 1,
      lastRetryCount: 0,
      resent: 1,
    });
    // The old copy, redelivered twice (its consumers died): no crash loop.
    expect(await isCrashLooping(p.pool, id, 0, 0)).to.be.false();
    expect(await isCrashLooping(p.pool, id, 0, 0)).to.be.false();
    expect(await ledger(id)).to.containDeep({unfinished_starts: 0});
    // The current copy's redeliveries still count.
    expect(await isCrashLooping(p.pool, id, 0, 1)).to.be.false();
    expect(await isCrashLooping(p.pool, id, 0, 1)).to.be.true();
  });

  it('waits the longest retry delay plus the grace', () => {
    // TEST_RETRY's delays, longest last.
    const longest = Math.round(
      TEST_RETRY.retryDelayMs *
        TEST_RETRY.multiplier ** (TEST_RETRY.maxRetries - 1),
    );
    expect(lostRunAfterMs(TEST_RETRY, 5000)).to.equal(longest + 5000);
    expect(lostRunAfterMs({...TEST_RETRY, maxRetries: 0}, 5000)).to.equal(5000);
  });
});
