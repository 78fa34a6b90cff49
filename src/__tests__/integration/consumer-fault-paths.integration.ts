import {expect} from '@loopback/testlab';
import type {Channel, Message} from 'amqplib';
import {existsSync, readFileSync, rmSync} from 'node:fs';
import path from 'node:path';
import {setTimeout as sleep} from 'node:timers/promises';
import {HealthBindings} from '../../keys';
import {
  assertTopology,
  brokerTopology,
  DELIVERY_LIMIT,
  FAILED_QUEUE,
  retryTier,
  RETRY_QUEUE,
  TASK_QUEUE,
} from '../../queue/topology';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {ROUND_AFTER_DELIVERIES} from '../../consumer/delivery-limit-round';
import {givenProducer} from '../fixtures/test-producer';
import {lostRunAfterMs, sweepLostRuns} from '../../producer/lost-run-sweep';
import {busyWorkQueues} from '../../queue/queue-stats';
import {TaskSchedulerApplication} from '../../application';
import {LogCapture} from '../fixtures/log-capture';
import {givenTestConfig} from '../fixtures/test-app';
import {
  drainQueue,
  resetBroker,
  TEST_AMQP_URL,
  withChannel,
} from '../fixtures/test-broker';
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
  TEST_DATABASE_URL,
  truncateAll,
  withClient,
} from '../fixtures/test-database';
import amqp from 'amqplib';

/** The channel a consumer takes deliveries from (before and after issue 14's Subscription). */
function channelOf(consumer: object): Channel {
  const c = consumer as {subscription?: {channel?: Channel}; channel?: Channel};
  const channel = c.subscription?.channel ?? c.channel;
  if (!channel) throw new Error('the consumer has no channel');
  return channel;
}

/** A channel-level close by RabbitMQ: acking an unknown delivery tag is a 406. */
function closeByBroker(channel: Channel): void {
  channel.ack({fields: {deliveryTag: 999_999}} as unknown as Message);
}

/**
 * Issue 14, items 1, 2, 3 and 7: the consumer's fault paths on a real
 * PostgreSQL (through a TCP proxy where it must go away) and RabbitMQ.
 */
describe('consumer fault paths', () => {
  let workersDir: string;
  let consumer: TestConsumer | undefined;
  let proxy: TcpProxy;
  const out = (name: string) => path.join(workersDir, `${name}.out`);
  const lines = (name: string) =>
    existsSync(out(name)) ? readFileSync(out(name), 'utf8') : '';

  before(() => {
    workersDir = givenWorkersDir({
      slow: `#!/bin/sh\necho start >> "$(dirname "$0")/slow.out"\nsleep 1.5\necho done >> "$(dirname "$0")/slow.out"\n`,
      // Long enough that a loaded machine still closes the channel mid-task.
      slower: `#!/bin/sh\necho start >> "$(dirname "$0")/slower.out"\n# Its own output elsewhere: a stopped shell leaves no orphan holding the pipes.\nsleep 4 >/dev/null 2>&1\necho done >> "$(dirname "$0")/slower.out"\n`,
      quick: `#!/bin/sh\necho run >> "$(dirname "$0")/quick.out"\n`,
      'slow-fail': `#!/bin/sh\necho run >> "$(dirname "$0")/slow-fail.out"\nsleep 1\nexit 1\n`,
      attempt: `#!/bin/sh\necho "$TASK_ATTEMPT" >> "$(dirname "$0")/attempt.out"\n`,
      'attempt-fail': `#!/bin/sh\necho "$TASK_ATTEMPT" >> "$(dirname "$0")/attempt-fail.out"\nexit 1\n`,
    });
  });
  after(() => rmSync(workersDir, {recursive: true, force: true}));
  beforeEach(async () => {
    for (const name of [
      'slow',
      'slower',
      'quick',
      'slow-fail',
      'attempt',
      'attempt-fail',
    ]) {
      rmSync(out(name), {force: true});
    }
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`UPDATE worker SET command = 'slow' WHERE id = 1`);
    await sql(`UPDATE worker SET command = 'quick' WHERE id = 2`);
    await sql(`UPDATE worker SET command = 'slow-fail' WHERE id = 3`);
    await sql(`UPDATE worker SET command = 'slower' WHERE id = 4`);
    proxy = new TcpProxy(
      '127.0.0.1',
      Number(new URL(TEST_DATABASE_URL).port || 5432),
    );
    await proxy.start();
  });
  afterEach(async () => {
    proxy.restore();
    await consumer?.stop(100);
    consumer = undefined;
    await proxy.close();
    await resetBroker();
  });

  const viaProxy = () => viaPort(TEST_DATABASE_URL, proxy.port);

  /** A claimed, published run of worker `workerId`; `ledger: false` sends no execution id. */
  async function publishRun(
    workerId: number,
    options: {
      ledger?: boolean;
      headers?: Record<string, unknown>;
      /** Runs once the rows exist, before the message goes out. */
      beforePublish?: () => Promise<void>;
    } = {},
  ): Promise<number> {
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id)
       VALUES ('t', '* * * * *', $1) RETURNING id`,
      [workerId],
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, container_id, status, published_at, attempts)
       VALUES ($1, 'cron-2026-11-23-10-00', 'test', 'published', now(), 0) RETURNING id`,
      [scheduler.id],
    );
    const executionId = Number(execution.id);
    await options.beforePublish?.();
    await publishTask(
      {
        type: 'worker',
        id: workerId,
        scheduler_id: scheduler.id,
        params_scheduler: '{}',
      },
      {
        ...(options.ledger === false
          ? {}
          : {
              'x-execution-id': executionId,
              'x-execution-key': 'cron-2026-11-23-10-00',
            }),
        ...options.headers,
      },
    );
    return executionId;
  }

  const ledger = async (id: number) =>
    (await sql(`SELECT * FROM scheduler_execution WHERE id = $1`, [id]))[0];
  /** Waits until the run's ledger row reaches `status`. */
  const ledgerReaches = (id: number, status: string, timeoutMs = 15_000) =>
    eventually(
      async () => (await ledger(id)).status === status || undefined,
      timeoutMs,
      `the run ${status}`,
    );
  /**
   * The worker process itself is running: 'Task started' comes before the
   * executor reads the worker's row, so a fault injected right after that log
   * could hit the lookup instead of the running task.
   */
  const running = (worker: string) =>
    eventually(() => lines(worker) || undefined, 10_000, `${worker} running`);

  describe('item 1: an outcome that cannot be recorded', () => {
    it('acks a task that ran when PostgreSQL is cut during its outcome mark, and never runs it again', async () => {
      consumer = await givenConsumer({
        workersDir,
        databaseUrl: viaProxy(),
        tuning: {outcomeMarkRetryMs: 20_000, requeueDelayMs: 200},
      });
      const id = await publishRun(1);
      await running('slow');
      proxy.cut();
      await eventually(() => lines('slow').includes('done') || undefined);
      await sleep(1000);
      proxy.restore();
      await ledgerReaches(id, 'succeeded');
      await sleep(1500);
      expect(lines('slow')).to.equal('start\ndone\n');
      expect(await ledger(id)).to.containDeep({
        status: 'succeeded',
        attempts: 1,
      });
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    });

    it('gives up the outcome mark after its bounded time, logs it and acks the message', async () => {
      consumer = await givenConsumer({
        workersDir,
        databaseUrl: viaProxy(),
        tuning: {outcomeMarkRetryMs: 500, requeueDelayMs: 200},
      });
      const id = await publishRun(1);
      await running('slow');
      proxy.cut();
      await eventually(
        () =>
          consumer!.logs.find(
            'Could not record the task outcome; message acknowledged without it',
          ).length === 1 || undefined,
        10_000,
        'the give-up log',
      );
      proxy.restore();
      await sleep(1500);
      expect(lines('slow')).to.equal('start\ndone\n');
      // The mark is lost (logged); the message is not requeued, so the task does not run again.
      expect((await ledger(id)).status).to.equal('running');
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);

      // Once it has been running longer than any attempt can take, the
      // lost-run sweep fails it for an operator instead of leaving it running
      // for ever (it stayed running before session 40); it does not run again.
      await sql(
        `UPDATE scheduler_execution
            SET executed_at = executed_at - interval '3 hours',
                published_at = published_at - interval '3 hours',
                started_at = started_at - interval '3 hours'
          WHERE id = $1`,
        [id],
      );
      const producer = await givenProducer();
      try {
        const swept = await sweepLostRuns(
          producer.pool,
          producer.publisher,
          producer.logs.logger,
          {
            lostAfterMs: lostRunAfterMs(TEST_RETRY, 60_000),
            busyQueues: () => busyWorkQueues(producer.connection),
            staleBefore: () => new Date(0),
          },
        );
        expect(swept.stuck).to.equal(1);
      } finally {
        await producer.stop();
      }
      expect(await ledger(id)).to.containDeep({status: 'failed'});
      expect((await ledger(id)).last_error).to.startWith('outcome unknown: ');
      expect(await sql(`SELECT * FROM failed_task`)).to.have.length(1);
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
      expect(lines('slow')).to.equal('start\ndone\n');
    });

    it('requeues a delivery it cannot start (PostgreSQL down) only after a delay, then runs it once', async () => {
      consumer = await givenConsumer({
        workersDir,
        databaseUrl: viaProxy(),
        tuning: {requeueDelayMs: 300},
      });
      proxy.cut();
      const id = await publishRun(2);
      await sleep(2000);
      const requeues = consumer.logs.find(
        'Task handling failed; message requeued',
      ).length;
      // 300 + 600 + 1200 ms of backoff: a handful, not a hot loop.
      expect(requeues).to.be.within(1, 4);
      proxy.restore();
      await ledgerReaches(id, 'succeeded');
      expect(lines('quick')).to.equal('run\n');
    });
  });

  /** Worker `workerId` runs `command`; a consumer reaches PostgreSQL through the proxy. */
  async function givenProxiedConsumer(
    workerId: number,
    command: string,
    tuning: Parameters<typeof givenConsumer>[0]['tuning'],
  ): Promise<TestConsumer> {
    await sql(`UPDATE worker SET command = $1 WHERE id = $2`, [
      command,
      workerId,
    ]);
    return givenConsumer({workersDir, databaseUrl: viaProxy(), tuning});
  }

  /**
   * The chaos run of 2026-12-02 (seed 2052213336): a database cut that lands
   * after the start mark but before the executor has read its worker's row
   * made the lookup fail, and that was taken for the task failing: a retry
   * was spent (the last one parks the run) while the worker never ran.
   */
  describe('a task whose definition cannot be read (PostgreSQL cut before it starts)', () => {
    /**
     * Publishes a run while the worker table is locked, waits until the
     * consumer has marked the start and its lookup waits on the lock, then
     * cuts the consumer's database link under that lookup.
     */
    async function cutDuringTheLookup(
      workerId: number,
      headers: Record<string, unknown> = {},
      cutMs = 500,
    ): Promise<number> {
      const id = await withClient(TEST_DATABASE_URL, async locker => {
        // Taken once the rows exist: the scheduler's foreign key needs the worker row.
        const published = await publishRun(workerId, {
          headers,
          beforePublish: async () => {
            await locker.query('BEGIN');
            await locker.query('LOCK TABLE worker IN ACCESS EXCLUSIVE MODE');
          },
        });
        await eventually(
          async () =>
            (await ledger(published)).status === 'running' || undefined,
          10_000,
          'the start mark',
        );
        await eventually(
          async () =>
            (
              await sql<{n: number}>(
                `SELECT count(*)::int AS n FROM pg_stat_activity
                  WHERE wait_event_type = 'Lock' AND query LIKE '%FROM worker WHERE id%'`,
              )
            )[0].n > 0 || undefined,
          10_000,
          'the lookup waiting on the lock',
        );
        proxy.cut();
        await locker.query('ROLLBACK');
        return published;
      });
      await sleep(cutMs);
      proxy.restore();
      return id;
    }

    it('spends no retry: the delivery is requeued and runs later as the same attempt', async () => {
      consumer = await givenProxiedConsumer(2, 'attempt', {
        outcomeMarkRetryMs: 20_000,
        requeueDelayMs: 200,
      });
      const id = await cutDuringTheLookup(2);
      await ledgerReaches(id, 'succeeded');
      await sleep(1000);
      expect(lines('attempt')).to.equal('1\n');
      expect(
        consumer.logs.find('Scheduling retry 1/3 in 200ms'),
      ).to.have.length(0);
      const [requeued] = consumer.logs.find(
        'Task could not start; message requeued',
      );
      expect(requeued).to.containDeep({requeue: 1, requeue_in_ms: 200});
      expect(requeued.error).to.startWith('worker 2 could not be read: ');
      expect(
        consumer.logs.find('Task could not start; message requeued'),
      ).to.have.length(1);
      expect(await drainQueue(RETRY_QUEUE)).to.have.length(0);
      // The start that never began is taken back: one attempt ran.
      expect(await ledger(id)).to.containDeep({
        status: 'succeeded',
        attempts: 1,
      });
    });

    it('holds the delivery while the database stays away past the outcome mark time: no crash-loop count, one attempt', async () => {
      consumer = await givenProxiedConsumer(2, 'attempt', {
        outcomeMarkRetryMs: 300,
        requeueDelayMs: 100,
      });
      const id = await cutDuringTheLookup(2, {}, 2500);
      await ledgerReaches(id, 'succeeded');
      expect(
        consumer.logs.find(
          'Could not undo the start of a task that did not begin; retrying',
        ).length,
      ).to.be.above(0);
      expect(
        consumer.logs.find(
          'Could not undo the start of a task that did not begin; message requeued without it',
        ),
      ).to.have.length(0);
      expect(lines('attempt')).to.equal('1\n');
      expect(await ledger(id)).to.containDeep({
        attempts: 1,
        unfinished_starts: 0,
      });
    });

    it('does not park a last attempt that never ran: it runs, then the failing run is parked', async () => {
      consumer = await givenProxiedConsumer(3, 'attempt-fail', {
        outcomeMarkRetryMs: 20_000,
        requeueDelayMs: 200,
      });
      const id = await cutDuringTheLookup(3, {
        'x-retry-count': TEST_RETRY.maxRetries,
      });
      await ledgerReaches(id, 'failed');
      await sleep(500);
      expect(lines('attempt-fail')).to.equal(`${TEST_RETRY.maxRetries + 1}\n`);
      expect((await ledger(id)).last_error).to.equal(
        'worker exited with code 1',
      );
      expect(await sql(`SELECT * FROM failed_task`)).to.have.length(1);
    });
  });

  describe('a task whose definition read fails for good, or again and again', () => {
    it('takes an error that would come again (a renamed column) for the task failing, as before', async () => {
      await sql(`UPDATE worker SET command = 'attempt-fail' WHERE id = 3`);
      consumer = await givenConsumer({
        workersDir,
        tuning: {requeueDelayMs: 50},
      });
      await sql(
        `ALTER TABLE worker RENAME COLUMN timeout_ms TO timeout_ms_gone`,
      );
      try {
        const id = await publishRun(3, {
          headers: {'x-retry-count': TEST_RETRY.maxRetries},
        });
        await ledgerReaches(id, 'failed', 10_000);
        expect((await ledger(id)).last_error).to.match(
          /column "timeout_ms" does not exist/,
        );
      } finally {
        await sql(
          `ALTER TABLE worker RENAME COLUMN timeout_ms_gone TO timeout_ms`,
        );
      }
      expect(
        consumer.logs.find('Task could not start; message requeued'),
      ).to.have.length(0);
      expect(lines('attempt-fail')).to.equal('');
      await eventually(
        async () =>
          (await sql(`SELECT * FROM failed_task`)).length === 1 || undefined,
        10_000,
        'the parked task stored',
      );
    });

    it('requeues a lookup that keeps timing out a bounded number of times, pausing longer each time, then spends a retry', async () => {
      await sql(`UPDATE worker SET command = 'attempt' WHERE id = 2`);
      const url = new URL(TEST_DATABASE_URL);
      // Each lookup behind the lock gives up after 200 ms (57014: transient).
      url.searchParams.set('options', '-c statement_timeout=200');
      consumer = await givenConsumer({
        workersDir,
        databaseUrl: url.toString(),
        tuning: {requeueDelayMs: 50},
      });
      const id = await withClient(TEST_DATABASE_URL, async locker => {
        const published = await publishRun(2, {
          beforePublish: async () => {
            await locker.query('BEGIN');
            await locker.query('LOCK TABLE worker IN ACCESS EXCLUSIVE MODE');
          },
        });
        await eventually(
          () =>
            consumer!.logs.find(
              'Task could not start again; counted as a failed attempt',
            ).length === 1 || undefined,
          20_000,
          'the give-up',
        );
        await locker.query('ROLLBACK');
        return published;
      });
      await ledgerReaches(id, 'succeeded');
      const requeues = consumer.logs.find(
        'Task could not start; message requeued',
      );
      expect(requeues.map(r => r.requeue_in_ms)).to.eql([
        50, 100, 200, 400, 800,
      ]);
      expect(requeues[0].error).to.match(
        /^worker 2 could not be read: canceling statement due to statement timeout/,
      );
      expect(
        consumer.logs.find('Scheduling retry 1/3 in 200ms'),
      ).to.have.length(1);
      // The retry ran the worker: attempt 2, the first one given up.
      expect(lines('attempt')).to.equal('2\n');
    });
  });

  /**
   * A quorum queue dead-letters a message past its delivery limit (50) to
   * cron_scheduler_retry, whose expiry would route it back to the queue it
   * came from: RabbitMQ takes that for a dead-letter cycle and holds the
   * message there for ever (found by the hostile review of the not-started
   * requeues: `messages=1 ready=0`, "Dead-letter queues cycle detected").
   */
  describe("a delivery requeued up to the broker's delivery limit", () => {
    /** Takes the next delivery of the task queue `times` times and requeues it each time. */
    async function requeueByHand(times: number): Promise<void> {
      await withChannel(async channel => {
        await channel.prefetch(1);
        let seen = 0;
        await new Promise<void>((resolve, reject) => {
          channel
            .consume(TASK_QUEUE, message => {
              if (!message) return;
              seen++;
              channel.nack(message, false, true);
              if (seen === times) {
                channel
                  .cancel(message.fields.consumerTag)
                  .then(() => resolve(), reject);
              }
            })
            .catch(reject);
        });
      });
    }

    it('goes round through the delay queue instead of into the dead-letter cycle, and runs once PostgreSQL is back', async () => {
      const id = await publishRun(2);
      // A delivery or two more may reach the hand consumer before it stops.
      await requeueByHand(DELIVERY_LIMIT - 6);
      proxy.cut();
      consumer = await givenConsumer({
        workersDir,
        databaseUrl: viaProxy(),
        tuning: {requeueDelayMs: 20},
      });
      // Failed starts take it past the limit (or would, without the round).
      await eventually(
        () =>
          consumer!.logs.find('Task handling failed; message requeued')
            .length >= 8 || undefined,
        8_000,
        'eight failed starts',
      ).catch(() => undefined);
      proxy.restore();
      await ledgerReaches(id, 'succeeded');
      expect(lines('quick')).to.equal('run\n');
      const [round] = consumer.logs.find(
        "Requeued through the delay queue: its deliveries reached the broker's limit",
      );
      expect(round.delivery_count).to.be.within(
        ROUND_AFTER_DELIVERIES,
        DELIVERY_LIMIT,
      );
      // A round is no retry: the run's one attempt ran as attempt 1.
      expect(consumer.logs.find('Task started')[0]).to.containDeep({
        attempt: 1,
      });
      expect(await drainQueue(RETRY_QUEUE)).to.have.length(0);
    });
  });

  describe('item 2: a consumer that consumes nothing', () => {
    it('resubscribes the task consumer after a channel-level close (406) and takes tasks again', async () => {
      consumer = await givenConsumer({workersDir});
      closeByBroker(channelOf(consumer.tasks));
      await sleep(1000);
      const id = await publishRun(2);
      await ledgerReaches(id, 'succeeded', 10_000);
      expect(lines('quick')).to.equal('run\n');
    });

    it('resubscribes the failed-task consumer after a channel-level close', async () => {
      consumer = await givenConsumer({workersDir});
      closeByBroker(channelOf(consumer.failed));
      await sleep(1000);
      await withChannel(async channel => {
        channel.sendToQueue(
          FAILED_QUEUE,
          Buffer.from(
            JSON.stringify({
              type: 'worker',
              id: 2,
              scheduler_id: 1,
              failed_reason: 'boom',
              retry_count: 3,
            }),
          ),
          {persistent: true},
        );
        await sleep(20);
      });
      await eventually(
        async () =>
          (await sql(`SELECT * FROM failed_task`)).length === 1 || undefined,
        10_000,
        'the failed task row',
      );
    });

    it('settles a delivery once: a database cut after parking does not nack the acked message', async () => {
      consumer = await givenConsumer({
        workersDir,
        databaseUrl: viaProxy(),
        tuning: {outcomeMarkRetryMs: 20_000, requeueDelayMs: 200},
      });
      const id = await publishRun(3, {
        headers: {'x-retry-count': TEST_RETRY.maxRetries},
      });
      await running('slow-fail');
      proxy.cut();
      await sleep(2000);
      proxy.restore();
      await eventually(
        async () =>
          ((await ledger(id)).status === 'failed' &&
            (await sql(`SELECT * FROM failed_task`)).length === 1) ||
          undefined,
        15_000,
        'the failed run',
      );
      await sleep(500);
      expect(consumer.logs.find('Consumer channel error')).to.have.length(0);
      expect(lines('slow-fail')).to.equal('run\n');
      expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
    });

    it('is not ready while it has no subscription, and ready again once it has one', async () => {
      // A worker process: no REST server, readiness on its health port.
      const app = new TaskSchedulerApplication(
        givenTestConfig({appMode: 'worker', healthPort: 0}),
        new LogCapture().logger,
      );
      try {
        await app.start();
        const readiness = await app.get(HealthBindings.READINESS);
        const consumerCheck = async () => (await readiness.check()).consumer;
        await eventually(
          async () => (await consumerCheck())?.status === 'up' || undefined,
          10_000,
          'a ready consumer',
        );
        // The broker cancels the consumer; resubscribing fails while the queue is missing.
        await withChannel(channel => channel.deleteQueue(TASK_QUEUE));
        expect(
          await eventually(async () => {
            const check = await consumerCheck();
            return check?.status === 'down' ? check : undefined;
          }),
        ).to.deepEqual({
          status: 'down',
          reason: 'not subscribed to cron_scheduler',
        });
        await resetBroker();
        await eventually(
          async () => (await consumerCheck())?.status === 'up' || undefined,
          15_000,
          'the consumer back',
        );
      } finally {
        await app.stop();
      }
    });
  });

  describe('item 3: unroutable retry publishes', () => {
    it('counts a returned retry publish as failure: the task is requeued, not acked', async () => {
      consumer = await givenConsumer({
        workersDir,
        tuning: {requeueDelayMs: 300},
      });
      await withChannel(channel =>
        channel.deleteQueue(retryTier(1, TEST_RETRY).queue),
      );
      await sql(`UPDATE worker SET command = 'missing-program' WHERE id = 2`);
      await publishRun(2, {ledger: false});
      const requeued = await eventually(
        () => consumer!.logs.find('Task handling failed; message requeued')[0],
        10_000,
        'the requeue',
      );
      expect(requeued.error).to.match(/no queue took the message/);
      expect(
        consumer.logs.find('Scheduling retry 1/3 in 200ms'),
      ).to.have.length(0);
      const stopping = consumer;
      consumer = undefined;
      await stopping.stop(100);
      expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
    });

    it('changes the retry delay without deleting a queue; cron_scheduler_retry stays declared', async () => {
      const open = async () => {
        const connection = await amqp.connect(TEST_AMQP_URL);
        const channel = await connection.createChannel();
        channel.on('close', () => {
          connection.close().catch(() => undefined);
        });
        return channel;
      };
      const changed = {...TEST_RETRY, retryDelayMs: 300};
      await assertTopology(open, brokerTopology(changed));
      await withChannel(async channel => {
        await channel.checkQueue(RETRY_QUEUE);
        await channel.checkQueue(retryTier(1, changed).queue);
      });
      expect(retryTier(1, changed).queue).to.equal(`${RETRY_QUEUE}_300ms`);
    });
  });

  describe('item 7: deliveries of a dead channel or after SIGTERM', () => {
    it('stops a task whose channel closed and runs it again from the redelivery', async () => {
      consumer = await givenConsumer({workersDir});
      const id = await publishRun(4);
      await running('slower');
      closeByBroker(channelOf(consumer.tasks));
      await ledgerReaches(id, 'succeeded', 20_000);
      expect(lines('slower')).to.equal('start\nstart\ndone\n');
      expect(
        consumer.logs.find(
          'Task interrupted: its channel closed; the broker redelivers it',
        ),
      ).to.have.length(1);
    });

    it('does not start a delivery that waited behind a task whose channel closed', async () => {
      consumer = await givenConsumer({workersDir, prefetch: 2});
      await publishRun(1, {ledger: false});
      await publishRun(2, {ledger: false});
      await running('slow');
      closeByBroker(channelOf(consumer.tasks));
      await eventually(
        () => lines('slow').includes('done') || undefined,
        15_000,
        'the redelivered slow task',
      );
      await eventually(() => lines('quick') || undefined);
      await sleep(500);
      expect(lines('quick')).to.equal('run\n');
      expect(
        consumer.logs.find('Stale delivery not started; requeued'),
      ).to.have.length(1);
    });

    it('after SIGTERM does not start a delivery that waited behind the running task', async () => {
      consumer = await givenConsumer({workersDir, prefetch: 2});
      await publishRun(1, {ledger: false});
      await publishRun(2, {ledger: false});
      await running('slow');
      const stopping = consumer;
      consumer = undefined;
      await stopping.stop(5000);
      expect(lines('slow')).to.equal('start\ndone\n');
      expect(lines('quick')).to.equal('');
      expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
    });
  });
});
