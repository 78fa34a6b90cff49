import {expect} from '@loopback/testlab';
import ExcelJS from 'exceljs';
import {mkdtemp, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TEST_RETRY,
  TestConsumer,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {emailsOf, givenPeople, People} from '../fixtures/test-people';
import {
  attachmentOf,
  givenSmtpServer,
  TestSmtpServer,
} from '../fixtures/test-smtp';

describe('scheduled report tasks (consumer, report child process)', () => {
  let workersDir: string;
  let outbox: string;
  let consumer: TestConsumer | undefined;
  let smtp: TestSmtpServer | undefined;
  let people: People;

  before(async () => {
    workersDir = givenWorkersDir({});
    outbox = await mkdtemp(path.join(tmpdir(), 'report-task-outbox-'));
  });
  after(async () => {
    await rm(workersDir, {recursive: true, force: true});
    await rm(outbox, {recursive: true, force: true});
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(
      `UPDATE report SET controller = 'SchedulerInventoryReport' WHERE id = 2`,
    );
    people = await givenPeople();
  });
  afterEach(async () => {
    await consumer?.stop(100);
    await smtp?.close();
    consumer = undefined;
    smtp = undefined;
  });

  const params = {
    controller: 'SchedulerInventoryReport',
    options_interface: {
      delivery: {
        email: true,
        web_notification: true,
        instant: false,
        deliver_to: {group_id: [0]},
      },
      output: {
        file: {
          type: 'Attachment',
          format: 'Excel',
          filename: 'inventory-{{user_id}}',
        },
      },
    },
    report_params: {active_only: true},
  };

  /** A scheduler of report 2 owned by dave, with a published run of it on the queue. */
  async function publishScheduledRun() {
    const body = structuredClone(params);
    body.options_interface.delivery.deliver_to.group_id = [people.groupId];
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, report_id, params, user_id)
       VALUES ('weekly inventory', '0 7 * * 1', 2, $1, $2) RETURNING id`,
      [body, people.dave],
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, 'cron-2026-11-23-07-00', 'test', 'published', now()) RETURNING id`,
      [scheduler.id],
    );
    await publishTask(
      {
        type: 'report',
        id: 2,
        scheduler_id: scheduler.id,
        params_scheduler: JSON.stringify(body),
      },
      {
        'x-execution-id': Number(execution.id),
        'x-execution-key': 'cron-2026-11-23-07-00',
      },
    );
    return {schedulerId: scheduler.id, executionId: Number(execution.id)};
  }

  it('renders the report in the child and delivers it by e-mail and notification', async () => {
    smtp = await givenSmtpServer();
    consumer = await givenConsumer({
      workersDir,
      reportEnv: {SMTP_URL: smtp.url, MAIL_OUTBOX_DIR: outbox},
    });
    const run = await publishScheduledRun();
    await eventually(
      async () =>
        (
          await sql(`SELECT status FROM scheduler_execution WHERE id = $1`, [
            run.executionId,
          ])
        )[0].status === 'succeeded' || undefined,
      20_000,
      'the report run to succeed',
    );
    expect(smtp.received).to.have.length(1);
    expect([...smtp.received[0].to].sort()).to.deepEqual(
      await emailsOf([people.alice, people.bob]),
    );
    // {{user_id}} is the scheduler's owner in a scheduled run.
    const xlsx = attachmentOf(
      smtp.received[0].raw,
      `inventory-${people.dave}.xlsx`,
    );
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx);
    const sheet = workbook.worksheets[0];
    expect(sheet.getRow(2).getCell(2).value).to.equal('weekly inventory');
    expect(sheet.getRow(2).getCell(5).value).to.equal('0 7 * * 1');
    expect(sheet.getRow(2).getCell(9).value).to.be.instanceOf(Date);
    const notified = await sql<{user_id: number}>(
      'SELECT user_id FROM notification ORDER BY user_id',
    );
    expect(notified.map(n => n.user_id)).to.deepEqual([
      people.alice,
      people.bob,
    ]);
    const [completed] = consumer.logs.find('Report completed');
    expect(completed.summary).to.containDeep({
      rows: 1,
      format: 'Excel',
      instant: true,
    });
  });

  it('fails the task when delivery fails, so the retry lifecycle applies', async () => {
    smtp = await givenSmtpServer({reject: true});
    consumer = await givenConsumer({
      workersDir,
      retry: {...TEST_RETRY, maxRetries: 1},
      reportEnv: {SMTP_URL: smtp.url, MAIL_OUTBOX_DIR: outbox},
    });
    const run = await publishScheduledRun();
    const [failed] = await eventually(
      async () => {
        const rows = await sql<{failed_reason: string; retry_count: number}>(
          'SELECT failed_reason, retry_count FROM failed_task',
        );
        return rows.length ? rows : undefined;
      },
      30_000,
      'the failed task',
    );
    expect(failed.failed_reason).to.match(
      /^report failed: e-mail delivery failed: .*relay refused/,
    );
    expect(failed.retry_count).to.equal(1);
    const [execution] = await sql<{status: string; attempts: number}>(
      'SELECT status, attempts FROM scheduler_execution WHERE id = $1',
      [run.executionId],
    );
    expect(execution).to.deepEqual({status: 'failed', attempts: 2});
  });
});
