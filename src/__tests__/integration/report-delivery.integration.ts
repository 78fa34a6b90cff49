import {expect} from '@loopback/testlab';
import {
  chmod,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import type {Pool} from 'pg';
import type {ReportConfig} from '../../config';
import {createPool} from '../../database/pg-pool';
import {ReportMailer} from '../../reports/delivery/report-mailer';
import {
  deliverReport,
  planRecipients,
  prepareReport,
  renderReport,
  ReportDeliveryError,
  reportWorkDir,
  ReportServices,
  ReportTimeoutError,
} from '../../reports/report-runner';
import {ReportTooLargeError} from '../../reports/report-limits';
import {LogCapture} from '../fixtures/log-capture';
import {sql, TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';
import {emailsOf, givenPeople, People} from '../fixtures/test-people';
import {attachmentOf, givenSmtpServer} from '../fixtures/test-smtp';

describe('report delivery (real SMTP server, real database)', () => {
  let db: Pool;
  let people: People;
  let outbox: string;
  const logs = new LogCapture();
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    db = createPool(TEST_DATABASE_URL, logs.logger);
    outbox = await mkdtemp(path.join(tmpdir(), 'report-outbox-'));
  });
  after(async () => {
    await db.end();
    await rm(outbox, {recursive: true, force: true});
  });
  beforeEach(async () => {
    for (const name of await readdir(outbox)) {
      await rm(path.join(outbox, name), {force: true});
    }
    await truncateAll();
    people = await givenPeople();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  function services(
    smtpUrl?: string,
    limits: Partial<ReportConfig> = {},
  ): ReportServices {
    const config: ReportConfig = {
      smtpUrl,
      mailFrom: 'reports@example.com',
      mailOutboxDir: outbox,
      instantTimeoutMs: 10_000,
      maxRows: 1000,
      maxBytes: 10 * 1024 * 1024,
      mailAttachmentMaxBytes: 10 * 1024 * 1024,
      outboxMaxAgeMs: 24 * 60 * 60 * 1000,
      outboxMaxBytes: 64 * 1024 * 1024,
      maxQueuedPerUser: 3,
      concurrency: 1,
      taskTimeoutMs: 60_000,
      ...limits,
    };
    const mailer = new ReportMailer(config, logs.logger);
    cleanups.push(async () => mailer.close());
    return {
      db,
      mailer,
      logger: logs.logger,
      timeZone: 'UTC',
      catchUpMinutes: 5,
      limits: config,
    };
  }

  /** Renders the self-check report and delivers it as `delivery` asks. */
  async function deliver(
    svc: ReportServices,
    delivery: Record<string, unknown>,
    format = 'Excel',
  ) {
    const prepared = prepareReport(
      {
        controller: 'SelfCheckReport',
        options_interface: {
          delivery,
          output: {
            file: {type: 'Attachment', format, filename: 'check-{{today}}'},
          },
        },
      },
      {
        now: new Date('2026-11-21T10:00:00Z'),
        timeZone: 'UTC',
        userId: people.dave,
      },
    );
    const recipients = await planRecipients(prepared, db);
    const work = await reportWorkDir();
    cleanups.push(work.cleanup);
    const rendered = await renderReport(prepared, svc, work.dir);
    const receipt = await deliverReport(prepared, rendered, recipients, svc);
    return {rendered, receipt, file: await readFile(rendered.path)};
  }

  it('e-mails the report to the named users and the active group members, attachment intact', async () => {
    const smtp = await givenSmtpServer();
    cleanups.push(smtp.close);
    const {receipt, file} = await deliver(services(smtp.url), {
      email: true,
      deliver_to: {
        user_id: [people.dave, people.alice],
        group_id: [people.groupId],
      },
    });
    expect(receipt.email).to.containDeep({transport: 'smtp', recipients: 3});
    expect(smtp.received).to.have.length(1);
    const [mail] = smtp.received;
    expect(mail.from).to.equal('reports@example.com');
    expect([...mail.to].sort()).to.deepEqual(
      await emailsOf([people.alice, people.bob, people.dave]),
    );
    expect(mail.raw.toString()).to.match(/Subject: Report: Self check/);
    const attached = attachmentOf(mail.raw, 'check-2026-11-21.xlsx');
    expect(attached.equals(file)).to.be.true();
  });

  it('writes an .eml file to the outbox when SMTP_URL is unset, and logs where', async () => {
    const {receipt, file} = await deliver(
      services(undefined),
      {email: true, deliver_to: {user_id: [people.bob]}},
      'CSV',
    );
    expect(receipt.email?.transport).to.equal('file');
    const files = await readdir(outbox);
    expect(files.filter(name => name.endsWith('.eml'))).to.have.length(1);
    const eml = await readFile(path.join(outbox, files[0]));
    expect(receipt.email?.file).to.equal(path.join(outbox, files[0]));
    expect(attachmentOf(eml, 'check-2026-11-21.csv').equals(file)).to.be.true();
    expect(
      logs.find('Report e-mail written to file (SMTP_URL is not set)'),
    ).to.have.length(1);
  });

  it('keeps the outbox private: folder 0700, files 0600', async () => {
    await chmod(outbox, 0o755);
    await deliver(
      services(undefined),
      {email: true, deliver_to: {user_id: [people.bob]}},
      'CSV',
    );
    expect((await stat(outbox)).mode & 0o777).to.equal(0o700);
    for (const name of await readdir(outbox)) {
      expect((await stat(path.join(outbox, name))).mode & 0o777).to.equal(
        0o600,
      );
    }
  });

  it('prunes the outbox by age and by size after each write', async () => {
    const old = path.join(outbox, 'old.eml');
    await writeFile(old, 'x');
    const monthAgo = new Date(Date.now() - 30 * 24 * 60 * 60 * 1000);
    await utimes(old, monthAgo, monthAgo);
    const big = path.join(outbox, 'big.eml');
    await writeFile(big, Buffer.alloc(300 * 1024));
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    await utimes(big, hourAgo, hourAgo);
    const {receipt} = await deliver(
      services(undefined, {outboxMaxBytes: 200 * 1024}),
      {email: true, deliver_to: {user_id: [people.bob]}},
      'CSV',
    );
    expect(await readdir(outbox)).to.deepEqual([
      path.basename(receipt.email!.file!),
    ]);
  });

  it('mails a notice instead of an attachment over REPORT_ATTACH_MAX_BYTES', async () => {
    const smtp = await givenSmtpServer();
    cleanups.push(smtp.close);
    await deliver(services(smtp.url, {mailAttachmentMaxBytes: 1024}), {
      email: true,
      deliver_to: {user_id: [people.alice]},
    });
    const raw = smtp.received[0].raw.toString();
    expect(raw).to.match(/too large to attach/);
    expect(raw).to.not.match(/check-2026-11-21\.xlsx/);
  });

  for (const format of ['CSV', 'Excel', 'PDF']) {
    it(`fails a ${format} report over REPORT_MAX_ROWS or REPORT_MAX_BYTES instead of sending it cut short`, async () => {
      const smtp = await givenSmtpServer();
      cleanups.push(smtp.close);
      const delivery = {email: true, deliver_to: {user_id: [people.alice]}};
      for (const limits of [{maxRows: 0}, {maxBytes: 10}]) {
        const error = await deliver(
          services(smtp.url, limits),
          delivery,
          format,
        ).catch(e => e);
        expect(error).to.be.instanceOf(ReportTooLargeError);
        expect(error.message).to.match(/REPORT_MAX_(ROWS|BYTES)/);
      }
      expect(smtp.received).to.have.length(0);
    });
  }

  it('notifies each named user and active group member once', async () => {
    const {receipt} = await deliver(services(), {
      web_notification: true,
      deliver_to: {
        user_id: [people.alice, people.dave, people.carol],
        group_id: [people.groupId],
      },
    });
    expect(receipt.web_notification).to.deepEqual({notified_users: 3});
    const rows = await sql<{
      user_id: number;
      title: string;
      payload: {filename: string};
    }>('SELECT user_id, title, payload FROM notification ORDER BY user_id');
    expect(rows.map(row => row.user_id)).to.deepEqual(
      [people.alice, people.bob, people.dave].sort((a, b) => a - b),
    );
    expect(rows[0].title).to.equal('Report ready: Self check');
    expect(rows[0].payload.filename).to.equal('check-2026-11-21.xlsx');
  });

  it('sends to the caller when no recipient is named', async () => {
    const {receipt} = await deliver(services(), {web_notification: true});
    expect(receipt.web_notification).to.deepEqual({notified_users: 1});
    expect(await sql('SELECT user_id FROM notification')).to.deepEqual([
      {user_id: people.dave},
    ]);
  });

  it('refuses a delivery without any active recipient', async () => {
    await expect(
      deliver(services(), {
        email: true,
        deliver_to: {user_id: [people.carol, 999999]},
      }),
    ).to.be.rejectedWith(/no active recipient/);
  });

  it('fails the delivery when the mail server refuses the message', async () => {
    const smtp = await givenSmtpServer({reject: true});
    cleanups.push(smtp.close);
    const error = await deliver(services(smtp.url), {
      email: true,
      deliver_to: {user_id: [people.alice]},
    }).catch(e => e);
    expect(error).to.be.instanceOf(ReportDeliveryError);
    expect(error.message).to.match(/e-mail delivery failed: .*relay refused/);
    expect(logs.find('Report e-mail failed')).to.not.be.empty();
  });

  it('stops rendering once its time is up', async () => {
    const prepared = prepareReport(
      {controller: 'SchedulerInventoryReport'},
      {now: new Date(), timeZone: 'UTC', userId: null},
    );
    // One row to render, so the timeout check between rows is reached.
    await sql(`INSERT INTO reminder (message) VALUES ('m')`);
    await sql(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       SELECT 'r', '* * * * *', id FROM reminder`,
    );
    const work = await reportWorkDir();
    cleanups.push(work.cleanup);
    await expect(
      renderReport(prepared, services(), work.dir, AbortSignal.abort()),
    ).to.be.rejectedWith(ReportTimeoutError);
  });
});
