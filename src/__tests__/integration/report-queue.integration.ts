import {expect} from '@loopback/testlab';
import type {AppConfig} from '../../config';
import {TaskContext, TaskFailure} from '../../executors/task-executor';
import {ConsumerBindings} from '../../keys';
import type {TaskMessage} from '../../queue/task-message';
import {TaskSchedulerApplication} from '../../application';
import {givenTestConfig} from '../fixtures/test-app';
import {LogCapture} from '../fixtures/log-capture';
import {resetBroker, withChannel} from '../fixtures/test-broker';
import {eventually, publishTask} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {REPORT_QUEUE, TASK_QUEUE} from '../../queue/topology';

/** A report executor whose runs wait until the test lets them finish. */
class HeldReports {
  readonly started: TaskContext[] = [];
  private release?: () => void;
  private held = new Promise<void>(resolve => (this.release = resolve));
  failFirstAttempt = false;

  readonly executor = {
    execute: async (context: TaskContext) => {
      this.started.push(context);
      if (this.failFirstAttempt && context.attempt === 1) {
        throw new TaskFailure('first attempt fails');
      }
      await Promise.race([
        this.held,
        new Promise(resolve =>
          context.signal.addEventListener('abort', resolve),
        ),
      ]);
    },
  };

  letFinish(): void {
    this.release?.();
  }
}

const report = (schedulerId: number): TaskMessage => ({
  type: 'report',
  id: 1,
  scheduler_id: schedulerId,
  params_scheduler: '{}',
});
const cronTask = (schedulerId: number): TaskMessage => ({
  type: 'worker',
  id: 1,
  scheduler_id: schedulerId,
  params_scheduler: '{}',
});

describe('reports on their own queue (issue 25)', () => {
  let running: TaskSchedulerApplication | undefined;
  let reports: HeldReports;
  let workerRuns: number[];

  async function givenWorkerRole(overrides: Partial<AppConfig> = {}) {
    reports = new HeldReports();
    workerRuns = [];
    const app = new TaskSchedulerApplication(
      givenTestConfig({appMode: 'worker', ...overrides}),
      new LogCapture().logger,
    );
    running = app;
    app.bind(ConsumerBindings.EXECUTORS).to({
      report: reports.executor,
      worker: {
        execute: async (context: TaskContext) => {
          workerRuns.push(context.message.scheduler_id);
        },
      },
    });
    await app.start();
  }

  beforeEach(async () => {
    await resetBroker();
    await truncateAll();
    await givenCatalog();
    // The schedulers the messages name: a message of a scheduler that does
    // not exist is acknowledged without running.
    await sql(
      `INSERT INTO scheduler (id, description, schedule, report_id)
       SELECT id, 'report ' || id, '* * * * *', 1
         FROM unnest(ARRAY[7, 101, 102, 103, 201, 202, 203, 301]) AS id`,
    );
  });
  afterEach(async () => {
    reports?.letFinish();
    await running?.stop();
    running = undefined;
  });

  it('runs a cron task while the one task slot would be busy with reports', async () => {
    await givenWorkerRole();
    for (const id of [101, 102, 103]) await publishTask(report(id));
    await eventually(() => reports.started.length === 1, 10_000, 'a report');
    await publishTask(cronTask(7));
    await eventually(
      () => workerRuns.includes(7),
      10_000,
      'the cron task to run while a report runs',
    );
    // Reports run one at a time (REPORT_CONCURRENCY 1): two still wait on their queue.
    expect(reports.started.map(c => c.message.scheduler_id)).to.deepEqual([
      101,
    ]);
    const ready = await withChannel(async channel => ({
      tasks: (await channel.checkQueue(TASK_QUEUE)).messageCount,
      reports: (await channel.checkQueue(REPORT_QUEUE)).messageCount,
    }));
    expect(ready).to.deepEqual({tasks: 0, reports: 2});
    reports.letFinish();
    await eventually(() => reports.started.length === 3, 10_000, 'all reports');
  });

  it('runs REPORT_CONCURRENCY reports at once', async () => {
    await givenWorkerRole({
      reports: {...givenTestConfig().reports, concurrency: 2},
    });
    for (const id of [201, 202, 203]) await publishTask(report(id));
    await eventually(() => reports.started.length === 2, 10_000, 'two reports');
    expect(
      reports.started.map(c => c.message.scheduler_id).sort(),
    ).to.deepEqual([201, 202]);
  });

  it('brings a failed report back to the report queue through the retry tiers', async () => {
    await givenWorkerRole();
    reports.failFirstAttempt = true;
    reports.letFinish();
    await publishTask(report(301));
    await eventually(
      () => reports.started.some(c => c.attempt === 2),
      15_000,
      'the retry of the report',
    );
    expect(
      reports.started.map(c => [c.message.scheduler_id, c.attempt]),
    ).to.deepEqual([
      [301, 1],
      [301, 2],
    ]);
  });
});
