import {expect, sinon} from '@loopback/testlab';
import {rmSync} from 'node:fs';
import path from 'node:path';
import {isCrashLooping} from '../../consumer/crash-loop-guard';
import {
  BusyQueues,
  LOST_RUN_RESENDS,
  lostRunAfterMs,
  LostRunSweepOptions,
  LostRunSweepResult,
  stuckRunAfterMs,
  sweepLostRuns,
} from '../../producer/lost-run-sweep';
import {MAX_DB_STATEMENT_TIMEOUT_MS} from '../../config';
import {RunLedger} from '../../consumer/run-ledger';
import {CRASH_LOOP_REASON} from '../../consumer/crash-loop-guard';
import {
  CLOCK_SKEW_ALLOWANCE_MS,
  longestAttemptMs,
} from '../../consumer/attempt-bound';
import {OUTCOME_MARK_RETRY_MS} from '../../consumer/task-consumer';
import {KILL_GRACE_MS} from '../../consumer/consumer.observer';
import {OUTPUT_DRAIN_MS} from '../../executors/child-process';
import {MAX_TASK_TIMEOUT_MS} from '../../queue/consumer-timeout';
import {LostRunTimer} from '../../producer/lost-run-timer';
import {busyWorkQueues} from '../../queue/queue-stats';
import type {OutgoingTask} from '../../queue/task-publisher';
import {REPORT_QUEUE, retryTiers, TASK_QUEUE} from '../../queue/topology';
import {drainQueue, resetBroker, withChannel} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TestConsumer,
  TEST_RETRY,
} from '../fixtures/test-consumer';
import {
  givenCatalog,
  sql,
  truncateAll,
  untilLastCrashOlderThan,
} from '../fixtures/test-database';
import {givenProducer, TestProducer} from '../fixtures/test-producer';
import {lockHolder, lockRun} from '../fixtures/lock-waits';
import {
  LOST_RUN_KEY,
  RECORDING_WORKER,
  recordedRuns,
} from '../fixtures/lost-runs';

const KEY = LOST_RUN_KEY;
/** What the tests call lost: no activity for a minute (runs are aged two). */
const LOST_AFTER_MS = 60_000;
const IDLE_SECONDS = 120;
/** DB_STATEMENT_TIMEOUT_MS unless set. */
const DEFAULT_STATEMENT_TIMEOUT_MS = 60_000;
const NOTHING_BUSY: BusyQueues = {tasks: false, reports: false, http: false};
const REPLACED =
  'Message replaced by a copy the lost-run sweep sent; acknowledged without running';

/**
 * Found by the fleet chaos profile (`.ci/run` at 2f8a607, RELIABILITY.md):
 * three retries confirmed into a delay queue never came back after the task
 * queue's leader stopped, and their runs stayed `retrying` for ever. Nothing
 * sent again a run left published or retrying with no message behind it.
 * These tests lose the message (purge it, or never publish it), age the
 * run past the cut-off, and check that the lost-run sweep sends it again
 * once, that the task then runs once even when the "lost" message turns up
 * after all, and what it does instead of sending: skip, fail, wait. The
 * hostile review of the first version found six of them (F1–F6 below).
 */
describe('lost-run sweep: runs whose message the broker lost', function (this: Mocha.Suite) {
  this.timeout(60_000);
  let workersDir: string;
  let p: TestProducer;
  const consumers: TestConsumer[] = [];
  const runsFile = () => path.join(workersDir, 'runs.out');
  const workerRuns = () => recordedRuns(workersDir);

  before(async () => {
    workersDir = givenWorkersDir({
      records: RECORDING_WORKER,
      fails: `#!/bin/sh\necho "$TASK_EXECUTION_KEY $TASK_ATTEMPT fails" >> "$(dirname "$0")/runs.out"\nexit 1\n`,
      slow: `#!/bin/sh\nsleep 3\necho "$TASK_EXECUTION_KEY $TASK_ATTEMPT" >> "$(dirname "$0")/runs.out"\n`,
    });
    // Runs idle since before a crash are failed, not sent: see lost-run-crash.
    await untilLastCrashOlderThan(IDLE_SECONDS + 10);
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    rmSync(runsFile(), {force: true});
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'records' WHERE id = 1`);
    await sql(`UPDATE worker SET command = 'fails' WHERE id = 2`);
    await sql(`UPDATE worker SET command = 'slow' WHERE id = 3`);
    p = await givenProducer();
  });
  afterEach(async () => {
    sinon.restore();
    for (const consumer of consumers.splice(0)) await consumer.stop(100);
    await p.stop();
  });

  const consumer = async () => {
    const started = await givenConsumer({workersDir});
    consumers.push(started);
    return started;
  };

  const stopConsumer = async (c: TestConsumer) => {
    consumers.splice(consumers.indexOf(c), 1);
    await c.stop(100);
  };

  interface RunState {
    status: string;
    attempts?: number;
    lastRetryCount?: number | null;
    /** How long ago its last activity was (seconds). */
    idleSeconds?: number;
    resent?: number;
    stayAlive?: boolean;
    workerId?: number;
    reportId?: number;
    trigger?: string;
    key?: string;
    /** Its minute: by default that of its last activity. */
    slot?: Date;
  }

  /** A run in the given state, its message nowhere. */
  async function givenRun(
    state: RunState,
  ): Promise<{id: number; schedulerId: number}> {
    const [scheduler] = await sql<{id: number}>(
      // Last written before its run was claimed, as a scheduler usually is.
      `INSERT INTO scheduler (description, schedule, worker_id, report_id, stay_alive, updated_at)
       VALUES ('t', CASE WHEN $3 THEN NULL ELSE '* * * * *' END, $1, $2, $3,
               now() - interval '1 day') RETURNING id`,
      [
        state.reportId ? null : (state.workerId ?? 1),
        state.reportId ?? null,
        state.stayAlive ?? false,
      ],
    );
    const idle = `now() - make_interval(secs => ${state.idleSeconds ?? IDLE_SECONDS})`;
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at,
          attempts, last_retry_count, started_at, finished_at, resent, resent_confirmed,
          trigger, slot)
       VALUES ($1, $2, 'test', $3, ${idle}, ${idle}, $4, $5,
               CASE WHEN $4 > 0 THEN ${idle} END, CASE WHEN $4 > 0 THEN ${idle} END, $6, $6,
               $7, COALESCE($8, date_trunc('minute', ${idle})))
       RETURNING id`,
      [
        scheduler.id,
        state.key ?? KEY,
        state.status,
        state.attempts ?? 0,
        state.lastRetryCount ?? null,
        state.resent ?? 0,
        state.trigger ?? 'schedule',
        state.slot ?? null,
      ],
    );
    return {id: Number(row.id), schedulerId: scheduler.id};
  }

  const ledger = async (id: number) =>
    (await sql(`SELECT * FROM scheduler_execution WHERE id = $1`, [id]))[0];

  const options = (
    overrides: Partial<LostRunSweepOptions> = {},
  ): LostRunSweepOptions => ({
    lostAfterMs: LOST_AFTER_MS,
    busyQueues: () => busyWorkQueues(p.connection),
    // The catch-up window reaches an hour back: the tests' runs are inside it.
    staleBefore: () => new Date(Date.now() - 3600_000),
    ...overrides,
  });

  const sweep = (
    overrides: Partial<LostRunSweepOptions> = {},
  ): Promise<LostRunSweepResult> =>
    sweepLostRuns(p.pool, p.publisher, p.logs.logger, options(overrides));

  const nothing = {resent: 0, failed: 0, skipped: 0, stuck: 0, deferred: 0};

  /** Wraps the producer's publisher: `before` runs when the copies are about to go out. */
  function beforePublish(before: (tasks: OutgoingTask[]) => Promise<void>) {
    const real = p.publisher.publish.bind(p.publisher);
    p.publisher.publish = async (tasks: OutgoingTask[]) => {
      await before(tasks);
      return real(tasks);
    };
  }

  /**
   * A run the sweep failed and kept for re-drive, sending nothing: its
   * failed_task row with its reason, one notice, one PERMANENTLY FAILED
   * TASK line; the next pass finds nothing. Returns its ledger row.
   */
  async function expectFailedAndKept(
    id: number,
    expected: {retryCount: number; schedulerId?: number; status?: string},
  ) {
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    const row = await ledger(id);
    expect(row.status).to.equal('failed');
    expect(row.finished_at).to.be.instanceOf(Date);
    const parked = await sql(`SELECT * FROM failed_task`);
    expect(parked).to.have.length(1);
    expect(parked[0]).to.containDeep({
      execution_id: String(id),
      ...(expected.schedulerId ? {scheduler_id: expected.schedulerId} : {}),
      type: 'worker',
      task_id: 1,
      retry_count: expected.retryCount,
      failed_reason: row.last_error,
    });
    expect(await sql(`SELECT * FROM failure_notice_outbox`)).to.have.length(1);
    expect(
      p.logs.find('PERMANENTLY FAILED TASK', {
        component: 'lost-run-sweep',
        execution_id: id,
        ...(expected.status ? {status: expected.status} : {}),
      }),
    ).to.have.length(1);
    expect(await sweep()).to.deepEqual(nothing);
    return row;
  }

  const workerBody = (schedulerId: number, workerId = 1) => ({
    type: 'worker',
    id: workerId,
    scheduler_id: schedulerId,
    params_scheduler: '{}',
  });

  it('sends a retrying run again at the retry it was lost at, and it then runs once', async () => {
    const {id} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });

    expect(await sweep()).to.deepEqual({...nothing, resent: 1});

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
    const row = await ledger(id);
    expect(row).to.containDeep({status: 'retrying', resent: 1});
    const [{fresh}] = await sql<{fresh: boolean}>(
      `SELECT resent_at > now() - interval '10 seconds' AS fresh
         FROM scheduler_execution WHERE id = $1`,
      [id],
    );
    expect(fresh).to.be.true();
    expect(row.status_reason).to.equal(
      'sent again as copy 1 (0 of 3 confirmed before it): no sign of its message for 2 min',
    );
    expect(
      p.logs.find('Run lost by the broker; sent again', {
        execution_id: id,
        resent: 1,
        retry_count: 1,
      }),
    ).to.have.length(1);

    await consumer();
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
    const {id, schedulerId} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    await sweep();
    const [copy] = await drainQueue(TASK_QUEUE);
    const c = await consumer();
    const original = {
      'x-execution-id': id,
      'x-execution-key': KEY,
      'x-retry-count': 1,
    };
    await publishTask(workerBody(schedulerId), original);
    await eventually(
      () => c.logs.find(REPLACED).length === 1,
      10_000,
      'the original to be acknowledged as replaced',
    );
    expect(workerRuns()).to.deepEqual([]);
    expect(await ledger(id)).to.containDeep({status: 'retrying', attempts: 1});

    await publishTask(workerBody(schedulerId), {...copy.properties.headers});
    await eventually(
      async () => (await ledger(id)).status === 'succeeded',
      15_000,
      'the copy to run',
    );
    // And once more, late: the run ended, so nothing runs.
    await publishTask(workerBody(schedulerId), original);
    await eventually(
      () =>
        c.logs.find(
          'Task already succeeded; redelivery acknowledged without running',
        ).length === 1,
      10_000,
      'the late original to be acknowledged',
    );
    expect(workerRuns()).to.deepEqual([`${KEY} 2`]);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('runs the task once when the late original and the copy reach two consumers together', async () => {
    const {id, schedulerId} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
      workerId: 3, // sleeps 3 s: both deliveries are in flight at once
    });
    await Promise.all([consumer(), consumer()]);
    // The original turns up just as the copy goes out.
    beforePublish(() =>
      publishTask(workerBody(schedulerId, 3), {
        'x-execution-id': id,
        'x-execution-key': KEY,
        'x-retry-count': 1,
      }),
    );
    expect(await sweep()).to.containDeep({resent: 1});
    await eventually(
      async () => (await ledger(id)).status === 'succeeded',
      20_000,
      'the run',
    );
    await new Promise(resolve => setTimeout(resolve, 1000));
    expect(workerRuns()).to.deepEqual([`${KEY} 2`]);
    expect(
      consumers.flatMap(c => c.logs.find(REPLACED)).map(r => r.resent),
    ).to.deepEqual([undefined]);
  });

  it('refuses a replaced message in a reminder, whose statement starts the run itself', async () => {
    const [user] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('u@example.com', 'u', 'x', 'viewer') RETURNING id`,
    );
    await sql(
      `UPDATE reminder SET user_ids = jsonb_build_array($1::int) WHERE id = 1`,
      [user.id],
    );
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
    const c = await consumer();
    await publishTask(body, {'x-execution-id': id, 'x-execution-key': KEY});
    await eventually(
      () => c.logs.find(REPLACED).length === 1,
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
    expect(await sql(`SELECT 1 FROM notification`)).to.have.length(1);
  });

  it('F5: sends the lost retry as it was, not the scheduler as edited since', async () => {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id, params)
       VALUES ('t', '0 0 1 1 *', 2, '{"a":"1"}') RETURNING id`,
    );
    const [row] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, $2, 'test', 'published', now()) RETURNING id`,
      [scheduler.id, KEY],
    );
    const id = Number(row.id);
    const sent = {
      ...workerBody(scheduler.id, 2),
      params_scheduler: '{"a":"1"}',
    };
    const c = await consumer();
    await publishTask(sent, {'x-execution-id': id, 'x-execution-key': KEY});
    await eventually(
      async () => (await ledger(id)).status === 'retrying',
      10_000,
      'the first attempt to fail',
    );
    // The retry is lost: the consumer is gone before it comes back, and
    // whatever came back is purged.
    await stopConsumer(c);
    await new Promise(resolve => setTimeout(resolve, 500));
    for (const tier of retryTiers(TEST_RETRY)) await drainQueue(tier.queue);
    await drainQueue(TASK_QUEUE);
    expect((await ledger(id)).payload).to.deepEqual(sent);
    // The owner edits the scheduler; the run ages.
    await sql(
      `UPDATE scheduler SET worker_id = 1, params = '{"b":"2"}' WHERE id = $1`,
      [scheduler.id],
    );
    await sql(
      `UPDATE scheduler_execution
          SET executed_at = now() - interval '2 minutes', published_at = now() - interval '2 minutes',
              started_at = now() - interval '2 minutes', finished_at = now() - interval '2 minutes'
        WHERE id = $1`,
      [id],
    );

    expect(await sweep()).to.containDeep({resent: 1});

    const [copy] = await drainQueue(TASK_QUEUE);
    expect(JSON.parse(copy.content.toString())).to.deepEqual(sent);
    expect(copy.properties.headers).to.containDeep({'x-retry-count': 1});
  });

  it('sends a published run again at the retry it was waiting for; an interrupted one with its message', async () => {
    const {id: fresh} = await givenRun({status: 'published'});
    // Set back to published by a shutdown during its third attempt.
    const {id: interrupted, schedulerId} = await givenRun({
      status: 'published',
      attempts: 3,
      lastRetryCount: 2,
    });
    const stored = {...workerBody(schedulerId), params_scheduler: '{"x":"y"}'};
    await sql(`UPDATE scheduler_execution SET payload = $2 WHERE id = $1`, [
      interrupted,
      stored,
    ]);

    expect(await sweep()).to.containDeep({resent: 2});

    const copies = new Map(
      (await drainQueue(TASK_QUEUE)).map(m => [
        m.properties.headers?.['x-execution-id'],
        m,
      ]),
    );
    expect(copies.get(fresh)!.properties.headers?.['x-retry-count']).to.equal(
      0,
    );
    const copy = copies.get(interrupted)!;
    expect(copy.properties.headers?.['x-retry-count']).to.equal(2);
    expect(JSON.parse(copy.content.toString())).to.deepEqual(stored);
  });

  it('keeps the message of a run a shutdown interrupts', async () => {
    const {id, schedulerId} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
      workerId: 3,
    });
    const c = await consumer();
    await publishTask(workerBody(schedulerId, 3), {
      'x-execution-id': id,
      'x-execution-key': KEY,
      'x-retry-count': 1,
    });
    await eventually(
      async () => (await ledger(id)).status === 'running',
      10_000,
      'the retry to start',
    );
    await stopConsumer(c);
    expect(await ledger(id)).to.containDeep({
      status: 'published',
      last_retry_count: 1,
      payload: workerBody(schedulerId, 3),
    });
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

    expect(await sweep()).to.deepEqual(nothing);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    const [{changed}] = await sql<{changed: number}>(
      `SELECT count(*)::int AS changed FROM scheduler_execution WHERE resent > 0`,
    );
    expect(changed).to.equal(0);
  });

  it('waits while cron_scheduler holds ready messages: the message may only be waiting', async () => {
    const {id} = await givenRun({status: 'published'});
    await withChannel(async channel => {
      channel.sendToQueue(TASK_QUEUE, Buffer.from('{}'), {persistent: true});
      await new Promise(resolve => setTimeout(resolve, 100));
    });

    expect(await sweep()).to.deepEqual({...nothing, deferred: 1});
    expect(await ledger(id)).to.containDeep({resent: 0});
    expect(
      p.logs.find(
        'Runs without activity left alone: their queue holds ready messages',
        {runs: 1},
      ),
    ).to.have.length(1);
    // A queue that cannot be read counts as busy.
    expect(await sweep({busyQueues: async () => null})).to.deepEqual({
      ...nothing,
      deferred: 1,
    });
  });

  it('F3: sends a lost worker run although the report queue holds a backlog; the lost report waits', async () => {
    const {id: worker, schedulerId} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    // Its retry's message, as the consumer keeps it: a worker task.
    await sql(`UPDATE scheduler_execution SET payload = $2 WHERE id = $1`, [
      worker,
      workerBody(schedulerId),
    ]);
    const {id: report} = await givenRun({status: 'published', reportId: 1});
    await withChannel(async channel => {
      channel.sendToQueue(REPORT_QUEUE, Buffer.from('{}'), {persistent: true});
      await new Promise(resolve => setTimeout(resolve, 100));
    });

    expect(await sweep()).to.deepEqual({...nothing, resent: 1, deferred: 1});

    expect(await ledger(worker)).to.containDeep({resent: 1});
    expect(await ledger(report)).to.containDeep({resent: 0});
  });

  it('waits its whole time again after a copy: a second pass sends nothing', async () => {
    const {id} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    await sweep();
    expect(await sweep()).to.deepEqual(nothing);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
    expect(await ledger(id)).to.containDeep({resent: 1});
  });

  it('F1: counts a copy before it exists, so a producer dying in between leaves no run two messages can start', async () => {
    const {id, schedulerId} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    let countedBeforePublish: unknown;
    beforePublish(async () => {
      countedBeforePublish = (await ledger(id)).resent;
      throw new Error('the producer died');
    });

    await expect(sweep()).to.be.rejectedWith('the producer died');

    expect(countedBeforePublish).to.equal(1);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    // The original turns up after all: it is not the newest copy.
    const c = await consumer();
    await publishTask(workerBody(schedulerId), {
      'x-execution-id': id,
      'x-execution-key': KEY,
      'x-retry-count': 1,
    });
    await eventually(
      () => c.logs.find(REPLACED).length === 1,
      10_000,
      'the original to be refused',
    );
    expect(workerRuns()).to.deepEqual([]);
  });

  it('uses up a copy the broker does not confirm, and sends the next one after the cut-off', async () => {
    const {id} = await givenRun({status: 'published'});
    // The queues answered; the broker is gone when the copy goes out.
    await p.connection.stop();

    expect(await sweep({busyQueues: async () => NOTHING_BUSY})).to.deepEqual(
      nothing,
    );
    expect(
      p.logs.find(
        'Copy of a lost run not confirmed by the broker; the next pass sends another',
        {execution_id: id, resent: 1},
      ),
    ).to.have.length(1);
    expect(await ledger(id)).to.containDeep({
      status: 'published',
      resent: 1,
      resent_confirmed: 0,
    });

    await p.stop();
    p = await givenProducer();
    await sql(
      `UPDATE scheduler_execution SET resent_at = now() - interval '2 minutes' WHERE id = $1`,
      [id],
    );
    expect(await sweep()).to.containDeep({resent: 1});
    const [copy] = await drainQueue(TASK_QUEUE);
    expect(copy.properties.headers?.['x-resent']).to.equal(2);
  });

  it('fails a run lost after its last copy, and keeps it for re-drive with its owner told', async () => {
    const {id} = await givenRun({
      status: 'retrying',
      attempts: 2,
      lastRetryCount: 1,
      resent: LOST_RUN_RESENDS,
    });

    expect(await sweep()).to.deepEqual({...nothing, failed: 1});

    const row = await expectFailedAndKept(id, {retryCount: 2});
    expect(row.last_error).to.equal(
      'lost: no sign of its message for 2 min after 3 copies sent again; given up',
    );
  });

  it('F6: skips a lost cron run never started whose minute left the catch-up window; sends a retry or an operator run however old', async () => {
    const threeDaysAgo = new Date(Date.now() - 3 * 86_400_000);
    const {id: unstarted} = await givenRun({
      status: 'published',
      slot: threeDaysAgo,
    });
    const {id: retry} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
      slot: threeDaysAgo,
    });
    const {id: manual} = await givenRun({
      status: 'published',
      slot: threeDaysAgo,
      trigger: 'manual',
      key: 'manual-1',
    });

    expect(await sweep()).to.deepEqual({...nothing, resent: 2, skipped: 1});

    expect(await ledger(unstarted)).to.containDeep({
      status: 'skipped',
      resent: 0,
      status_reason:
        'not sent again: its message was lost and its minute is older than the catch-up window',
    });
    expect(await ledger(retry)).to.containDeep({resent: 1});
    expect(await ledger(manual)).to.containDeep({resent: 1});
    expect(
      (await drainQueue(TASK_QUEUE)).map(
        m => m.properties.headers?.['x-execution-id'],
      ),
    ).to.deepEqual([retry, manual]);
  });

  it("F2: handles each run once a pass, whatever the producer host's clock says", async () => {
    const {schedulerId} = await givenRun({status: 'published'});
    await sql(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, executed_at, published_at)
       SELECT $1, 'cron-2026-11-21-' || n, 'test', 'published',
              now() - interval '2 minutes', now() - interval '2 minutes'
         FROM generate_series(1, 49) AS n`,
      [schedulerId],
    );
    // The producer host's clock is two hours behind the database's.
    sinon.useFakeTimers({
      now: Date.now() - 2 * 3600_000,
      toFake: ['Date'],
      shouldAdvanceTime: true,
    });

    const result = await sweep({batchSize: 10});

    expect(result).to.deepEqual({...nothing, resent: 50});
    const [counts] = await sql<{once: number; failed: number}>(
      `SELECT count(*) FILTER (WHERE resent = 1)::int AS once,
              count(*) FILTER (WHERE status = 'failed')::int AS failed
         FROM scheduler_execution`,
    );
    expect(counts).to.deepEqual({once: 50, failed: 0});
  });

  it('sends each run once when two producers sweep at the same time', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) {
      ids.push((await givenRun({status: 'published'})).id);
    }
    const other = await givenProducer({}, 'other-producer');
    try {
      const results = await Promise.all([
        sweep({batchSize: 5}),
        sweepLostRuns(
          other.pool,
          other.publisher,
          other.logs.logger,
          options({batchSize: 5, busyQueues: async () => NOTHING_BUSY}),
        ),
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

  it('leaves the run of a scheduler a delete holds to the next pass, instead of deadlocking with the delete', async () => {
    const {id, schedulerId} = await givenRun({
      status: 'published',
      resent: LOST_RUN_RESENDS,
    });
    // A delete holds the scheduler row, then (its trigger) wants the runs.
    const deleter = await lockHolder();
    try {
      await deleter.query('BEGIN');
      await deleter.query('SELECT id FROM scheduler WHERE id = $1 FOR UPDATE', [
        schedulerId,
      ]);
      const first = await Promise.race([
        sweep(),
        new Promise<'still waiting'>(resolve =>
          setTimeout(() => resolve('still waiting'), 3000),
        ),
      ]);
      expect(first).to.deepEqual(nothing);
      // Free only if the sweep holds nothing of the run.
      await lockRun(deleter, id);
    } finally {
      await deleter.query('ROLLBACK');
      await deleter.end();
    }
    expect(await sweep()).to.containDeep({failed: 1});
  });

  it('F4: counts each batch in task_scheduler_sweeps_total, even when a later batch fails', async () => {
    await givenRun({status: 'published'});
    await givenRun({status: 'published'});
    await givenRun({status: 'published', resent: LOST_RUN_RESENDS});
    let calls = 0;
    beforePublish(async () => {
      if (++calls === 2) throw new Error('the broker channel broke');
    });
    const timer = new LostRunTimer(
      p.pool,
      p.publisher,
      {
        // The copies stay in cron_scheduler: the queues count as idle here.
        ...options({batchSize: 1, busyQueues: async () => NOTHING_BUSY}),
        intervalMs: 60_000,
      },
      p.logs.logger,
      p.metrics,
    );

    await timer.runOnce();

    const {body: text} = await p.metrics.text();
    const value = (result: string) =>
      Number(
        new RegExp(
          `task_scheduler_sweeps_total\\{[^}]*result="${result}"[^}]*\\} (\\d+)`,
        ).exec(text)?.[1],
      );
    expect(value('resent_lost')).to.equal(1);
    expect(
      p.logs.find('Lost-run sweep failed', {error: 'the broker channel broke'}),
    ).to.have.length(1);
    // The next pass goes on: the failed run, then nothing more.
    await timer.runOnce();
    const {body: after} = await p.metrics.text();
    expect(after).to.match(
      /task_scheduler_sweeps_total\{[^}]*result="failed_lost"[^}]*\} 1/,
    );
  });

  it('R4: never fails a run for copies a flapping broker never took', async () => {
    const {id} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
    });
    for (let pass = 1; pass <= LOST_RUN_RESENDS + 1; pass++) {
      // The broker answers the queue check, and is gone when the copy goes out.
      await sweep({
        busyQueues: async () => {
          const busy = await busyWorkQueues(p.connection);
          await p.connection.stop();
          return busy;
        },
      });
      await p.stop();
      p = await givenProducer();
      // A whole cut-off later.
      await sql(
        `UPDATE scheduler_execution SET resent_at = resent_at - interval '2 minutes' WHERE id = $1`,
        [id],
      );
    }
    expect(await ledger(id)).to.containDeep({
      status: 'retrying',
      resent: LOST_RUN_RESENDS + 1,
      resent_confirmed: 0,
      status_reason:
        'sent again as copy 4 (0 of 3 confirmed before it): no sign of its message for 2 min',
    });
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    // The broker back: the next copy goes out.
    expect(await sweep()).to.containDeep({resent: 1});
    expect(await ledger(id)).to.containDeep({resent_confirmed: 1});
  });

  it('R5: holds a run without a stored message while any work queue is busy: its scheduler may have changed type since', async () => {
    const {id, schedulerId} = await givenRun({
      status: 'published',
      reportId: 1,
    });
    // Its report message waits behind a report backlog.
    await withChannel(async channel => {
      channel.sendToQueue(REPORT_QUEUE, Buffer.from('{}'), {persistent: true});
      await new Promise(resolve => setTimeout(resolve, 100));
    });
    // The owner points the scheduler at a worker.
    await sql(
      `UPDATE scheduler SET report_id = NULL, worker_id = 1 WHERE id = $1`,
      [schedulerId],
    );

    expect(await sweep()).to.deepEqual({...nothing, deferred: 1});
    expect(await ledger(id)).to.containDeep({resent: 0});
  });

  it('sends a lost cron run without a stored message while only the report queue is busy, when its scheduler is unchanged', async () => {
    const {id} = await givenRun({status: 'published'});
    await withChannel(async channel => {
      channel.sendToQueue(REPORT_QUEUE, Buffer.from('{}'), {persistent: true});
      await new Promise(resolve => setTimeout(resolve, 100));
    });

    expect(await sweep()).to.deepEqual({...nothing, resent: 1});
    expect(await ledger(id)).to.containDeep({resent: 1});
  });

  it('reports a confirmed copy although recording its confirmation fails', async () => {
    const {id} = await givenRun({status: 'published'});
    const query = p.pool.query.bind(p.pool) as (...args: unknown[]) => unknown;
    (p.pool as unknown as {query: unknown}).query = (...args: unknown[]) =>
      String(args[0]).includes('resent_confirmed = resent_confirmed + 1')
        ? Promise.reject(new Error('connection terminated'))
        : query(...args);
    const counted: number[] = [];

    const result = await sweep({onBatch: batch => counted.push(batch.resent)});

    expect(result).to.containDeep({resent: 1});
    expect(counted.reduce((sum, n) => sum + n, 0)).to.equal(1);
    expect(
      p.logs.find('Run lost by the broker; sent again', {execution_id: id}),
    ).to.have.length(1);
    expect(
      p.logs.find('Could not record which lost-run copies were confirmed', {
        error: 'connection terminated',
      }),
    ).to.have.length(1);
    expect(await ledger(id)).to.containDeep({resent: 1, resent_confirmed: 0});
  });

  it("R8: counts a run it failed even when the same batch's copy cannot be published", async () => {
    const {id: failedRun} = await givenRun({
      status: 'published',
      resent: LOST_RUN_RESENDS,
    });
    await givenRun({status: 'published'});
    p.publisher.publish = async () => {
      throw new Error('Channel closed');
    };
    const timer = new LostRunTimer(
      p.pool,
      p.publisher,
      {...options({busyQueues: async () => NOTHING_BUSY}), intervalMs: 60_000},
      p.logs.logger,
      p.metrics,
    );

    await timer.runOnce();

    expect((await ledger(failedRun)).status).to.equal('failed');
    const {body: text} = await p.metrics.text();
    expect(text).to.match(
      /task_scheduler_sweeps_total\{[^}]*result="failed_lost"[^}]*\} 1/,
    );
  });

  it('does not count a replaced redelivery towards the crash-loop guard', async () => {
    const {id} = await givenRun({
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

  it('believes no forged or garbled x-resent beyond what a missing one could do', async () => {
    const {id, schedulerId} = await givenRun({
      status: 'retrying',
      attempts: 1,
      lastRetryCount: 0,
      resent: 2,
    });
    const c = await consumer();
    for (const forged of [-1, 1.5, 'abc', '1', true, null]) {
      await publishTask(workerBody(schedulerId), {
        'x-execution-id': id,
        'x-execution-key': KEY,
        'x-retry-count': 1,
        'x-resent': forged,
      });
    }
    await eventually(
      () => c.logs.find(REPLACED).length === 6,
      10_000,
      'six refusals',
    );
    expect(workerRuns()).to.deepEqual([]);
    expect(await ledger(id)).to.containDeep({status: 'retrying', attempts: 1});
  });

  describe('runs left running with no outcome', () => {
    /** The running cut-off of these tests: a minute, an attempt's bound, the clock skew. */
    const STUCK_AFTER_MS = stuckRunAfterMs(LOST_AFTER_MS);
    const STUCK_IDLE_SECONDS = STUCK_AFTER_MS / 1000 + 60;
    /** The running cut-off of the first version (7bcddc5): lostAfterMs plus 30 min. */
    const FIRST_CUT_OFF_SECONDS = LOST_AFTER_MS / 1000 + 30 * 60;

    it('fails a run left running past any attempt (its consumer gave up recording the outcome), keeps it for re-drive and sends nothing', async () => {
      const {id, schedulerId} = await givenRun({
        status: 'running',
        attempts: 2,
        lastRetryCount: 1,
        idleSeconds: STUCK_IDLE_SECONDS,
      });

      expect(await sweep()).to.deepEqual({...nothing, stuck: 1});

      const row = await expectFailedAndKept(id, {
        retryCount: 1,
        schedulerId,
        status: 'running',
      });
      expect(row.resent).to.equal(0);
      expect(row.last_error).to.match(
        /^outcome unknown: running for \d+ min with no outcome recorded, .*not sent again, re-drive it if it did not run$/,
      );
    });

    it('leaves a run running for less than the consumer timeout past the cut-off, and a stay-alive run', async () => {
      const young = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        // Lost for a published run, not for a running one: a task may take 28 min.
        idleSeconds: STUCK_IDLE_SECONDS - 120,
      });
      const stayAlive = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        stayAlive: true,
        idleSeconds: STUCK_IDLE_SECONDS,
      });

      expect(await sweep()).to.deepEqual(nothing);
      expect((await ledger(young.id)).status).to.equal('running');
      expect((await ledger(stayAlive.id)).status).to.equal('running');
      expect(await sql(`SELECT * FROM failed_task`)).to.have.length(0);
    });

    it('waits while its queue holds ready messages: its consumer may have died and the broker handed the message back', async () => {
      const {id} = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: STUCK_IDLE_SECONDS,
      });

      const held = await sweep({
        busyQueues: async () => ({...NOTHING_BUSY, tasks: true}),
      });
      expect(held).to.deepEqual({...nothing, deferred: 1});
      expect((await ledger(id)).status).to.equal('running');
    });

    it('frees an overlap-skip scheduler whose later runs the stuck run held back', async () => {
      const {id, schedulerId} = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: STUCK_IDLE_SECONDS,
      });
      await sql(`UPDATE scheduler SET overlap_policy = 'skip' WHERE id = $1`, [
        schedulerId,
      ]);
      const open = () =>
        sql(
          `SELECT id FROM scheduler_execution
            WHERE scheduler_id = $1
              AND status IN ('claimed', 'published', 'running', 'retrying')`,
          [schedulerId],
        );
      expect(await open()).to.have.length(1);

      await sweep();

      expect((await ledger(id)).status).to.equal('failed');
      expect(await open()).to.have.length(0);
    });

    it('S1 (review of 7bcddc5): waits longer than any attempt allowed by the configuration, however small the grace', () => {
      // CRON_LOST_RUN_GRACE_MS at its minimum (1 s), no retries, a consumer
      // whose statement timeout is at its maximum (1 h).
      const statementTimeoutMs = MAX_DB_STATEMENT_TIMEOUT_MS;
      const cutOff = stuckRunAfterMs(
        lostRunAfterMs({...TEST_RETRY, maxRetries: 0}, 1000),
      );
      // The start mark, the 28-min limit, SIGKILL after the kill grace, the
      // output drain, a minute of outcome-mark retries whose last statement
      // may run its whole timeout.
      const longestAttempt =
        statementTimeoutMs +
        MAX_TASK_TIMEOUT_MS +
        KILL_GRACE_MS +
        OUTPUT_DRAIN_MS +
        OUTCOME_MARK_RETRY_MS +
        statementTimeoutMs;
      expect(longestAttemptMs(statementTimeoutMs)).to.equal(longestAttempt);
      expect(cutOff).to.be.aboveOrEqual(
        longestAttempt + CLOCK_SKEW_ALLOWANCE_MS,
      );
    });

    it('S2 (review of 7bcddc5): never fails a retry attempt a live consumer is running, its host clock 14 min behind the database 28 min into the task', async () => {
      // The start mark carries the consumer's clock; the sweep compares it
      // with the database's. 14 min of skew plus 28 min of running: 42 min.
      const lagMs = (14 + 28) * 60_000;
      expect(lagMs / 1000).to.be.above(FIRST_CUT_OFF_SECONDS);
      const lagging = await givenConsumer({
        workersDir,
        tuning: {clock: () => new Date(Date.now() - lagMs)},
      });
      consumers.push(lagging);
      // Attempt 1 ran and failed long ago; its retry is being delivered now.
      const {id, schedulerId} = await givenRun({
        status: 'retrying',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: 7200,
        workerId: 3,
      });
      await publishTask(workerBody(schedulerId, 3), {
        'x-execution-id': id,
        'x-execution-key': KEY,
        'x-retry-count': 1,
      });
      await eventually(
        async () => (await ledger(id)).status === 'running' || undefined,
        10_000,
        'the retry to start',
      );

      expect(await sweep()).to.deepEqual(nothing);

      await eventually(
        async () => (await ledger(id)).status === 'succeeded' || undefined,
        15_000,
        'the retry to succeed',
      );
      expect(await sql(`SELECT * FROM failed_task`)).to.have.length(0);
    });

    it('S3 (review of 7bcddc5): says so when the task kept for re-drive is the scheduler as edited after the claim', async () => {
      const {id, schedulerId} = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: STUCK_IDLE_SECONDS,
      });
      const unedited = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: STUCK_IDLE_SECONDS,
      });
      // Edited while its run was stuck: another worker, other params.
      await sql(
        `UPDATE scheduler SET worker_id = 2, params = '{"day":"friday"}' WHERE id = $1`,
        [schedulerId],
      );

      expect(await sweep()).to.deepEqual({...nothing, stuck: 2});

      const [edited] = await sql<{failed_reason: string}>(
        `SELECT failed_reason FROM failed_task WHERE execution_id = $1`,
        [id],
      );
      expect(edited.failed_reason).to.endWith(
        '; its scheduler was edited after the run was claimed, so the task kept for re-drive is the scheduler as it is now',
      );
      expect((await ledger(id)).last_error).to.equal(edited.failed_reason);
      const [plain] = await sql<{failed_reason: string}>(
        `SELECT failed_reason FROM failed_task WHERE execution_id = $1`,
        [unedited.id],
      );
      expect(plain.failed_reason).not.to.match(/edited/);
    });

    it('S4 (review of 7bcddc5): leaves a run handed back to a consumer whose prefetch holds it behind a long task, which then runs it', async () => {
      // Run B's first consumer died 35 min into it (its start mark stays);
      // the broker handed B to a consumer with prefetch 2 busy with task A:
      // nothing is ready in the queue, B waits unacknowledged.
      const c = await givenConsumer({workersDir, prefetch: 2});
      consumers.push(c);
      const a = await givenRun({
        status: 'published',
        idleSeconds: 0,
        workerId: 3,
        key: 'cron-2026-11-21-10-01',
      });
      await publishTask(workerBody(a.schedulerId, 3), {
        'x-execution-id': a.id,
        'x-execution-key': 'cron-2026-11-21-10-01',
      });
      await eventually(
        async () => (await ledger(a.id)).status === 'running' || undefined,
        10_000,
        'A to start',
      );
      const b = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: FIRST_CUT_OFF_SECONDS + 300,
        workerId: 3,
      });
      await publishTask(workerBody(b.schedulerId, 3), {
        'x-execution-id': b.id,
        'x-execution-key': KEY,
      });

      expect(await sweep()).to.deepEqual(nothing);

      await eventually(
        async () => (await ledger(b.id)).status === 'succeeded' || undefined,
        20_000,
        'B to run once A is done',
      );
    });

    it('T1 (review of 77daa85): never fails a run a consumer with a longer DB_STATEMENT_TIMEOUT_MS than the producer may still be running', async () => {
      // The producer on defaults; a consumer host with 30-min statements,
      // 5 min inside its own bound (no clock skew used).
      const idleMs = longestAttemptMs(30 * 60_000) - 5 * 60_000;
      expect(idleMs).to.be.above(
        LOST_AFTER_MS + longestAttemptMs(DEFAULT_STATEMENT_TIMEOUT_MS),
      );
      const {id} = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: Math.round(idleMs / 1000),
      });

      expect(await sweep()).to.deepEqual(nothing);

      // Its outcome mark arrives within the consumer's bound and is kept.
      await new RunLedger(p.pool).finished(id, 'succeeded', new Date(), 1);
      expect((await ledger(id)).status).to.equal('succeeded');
    });

    it('T3 (review of 77daa85): gives a run its consumer parked, but could not mark failed, the parked reason, not "outcome unknown"', async () => {
      const {id} = await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: STUCK_IDLE_SECONDS,
      });
      await sql(
        `INSERT INTO failed_task (execution_id, scheduler_id, type, task_id, payload,
                                  failed_reason, retry_count, failed_at)
         SELECT id, scheduler_id, 'worker', 1, '{}'::jsonb, $2, 0, now() - interval '4 hours'
           FROM scheduler_execution WHERE id = $1`,
        [id, CRASH_LOOP_REASON],
      );

      expect(await sweep()).to.deepEqual({...nothing, stuck: 1});

      expect(await ledger(id)).to.containDeep({
        status: 'failed',
        last_error: CRASH_LOOP_REASON,
      });
      expect(await sql(`SELECT * FROM failed_task`)).to.have.length(1);
      expect(await sql(`SELECT * FROM failure_notice_outbox`)).to.have.length(
        0,
      );
      expect(p.logs.find('PERMANENTLY FAILED TASK')).to.have.length(0);
      expect(
        p.logs.find(
          'Run left running although its consumer parked it; marked failed as parked',
          {execution_id: id},
        ),
      ).to.have.length(1);
    });

    it('counts the failed runs as failed_stuck in task_scheduler_sweeps_total', async () => {
      await givenRun({
        status: 'running',
        attempts: 1,
        lastRetryCount: 0,
        idleSeconds: STUCK_IDLE_SECONDS,
      });
      const timer = new LostRunTimer(
        p.pool,
        p.publisher,
        {...options(), intervalMs: 60_000},
        p.logs.logger,
        p.metrics,
      );

      await timer.runOnce();

      const {body: text} = await p.metrics.text();
      expect(text).to.match(
        /task_scheduler_sweeps_total\{[^}]*result="failed_stuck"[^}]*\} 1/,
      );
      expect(text).to.match(
        /task_scheduler_sweeps_total\{[^}]*result="failed_lost"[^}]*\} 0/,
      );
    });
  });

  it('waits the longest retry delay plus the grace', () => {
    const longest = Math.round(
      TEST_RETRY.retryDelayMs *
        TEST_RETRY.multiplier ** (TEST_RETRY.maxRetries - 1),
    );
    expect(lostRunAfterMs(TEST_RETRY, 5000)).to.equal(longest + 5000);
    expect(lostRunAfterMs({...TEST_RETRY, maxRetries: 0}, 5000)).to.equal(5000);
  });
});
