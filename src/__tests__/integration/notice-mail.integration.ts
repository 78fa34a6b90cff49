import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {createPool} from '../../database/pg-pool';
import {FailureNotices} from '../../notices/failure-notices';
import {noticeMissedRuns} from '../../notices/missed-runs-notice';
import {NoticeMailSender} from '../../notices/notice-mail-sender';
import {NoticeTimer} from '../../notices/notice-timer';
import type {ReportConfig} from '../../config';
import {ReportMailer} from '../../reports/delivery/report-mailer';
import {LogCapture} from '../fixtures/log-capture';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';
import {eventually} from '../fixtures/test-consumer';
import {insertSchedulers} from '../fixtures/test-producer';
import {givenSmtpServer, TestSmtpServer} from '../fixtures/test-smtp';

const MINUTE = 60_000;
const INTERVAL = 15 * MINUTE;
const at = (iso: string) => new Date(iso);
const plus = (start: Date, minutes: number) =>
  new Date(start.getTime() + minutes * MINUTE);
const RETRY = {firstDelayMs: MINUTE, maxDelayMs: 8 * MINUTE, maxAttempts: 5};

/** Issue 26, item 4: the e-mail copies of notices, with an injected clock. */
describe('notice e-mails', () => {
  let pool: Pool;
  let notices: FailureNotices;
  let owner: number;
  let schedulerId: number;
  let seq = 0;
  const logs = new LogCapture();
  const cleanups: Array<() => Promise<void> | void> = [];

  beforeEach(async () => {
    logs.clear();
    await truncateAll();
    await givenCatalog();
    [{id: owner}] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('owner@example.com', 'Owner', 'x', 'operator') RETURNING id`,
    );
    [schedulerId] = await insertSchedulers([{schedule: '* * * * *'}]);
    await sql(
      `UPDATE scheduler SET user_id = $1, notify = notify || '{"email": true}'
        WHERE id = $2`,
      [owner, schedulerId],
    );
    pool = createPool(TEST_DATABASE_URL, logs.logger);
    notices = new FailureNotices(pool, INTERVAL, logs.logger);
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await pool.end();
  });

  async function smtp(options: {port?: number} = {}): Promise<TestSmtpServer> {
    const server = await givenSmtpServer(options);
    cleanups.push(() => server.close());
    return server;
  }

  /** A sender on the project's mail delivery, as a (re)started process builds it. */
  function sender(smtpUrl: string): NoticeMailSender {
    const config = {
      smtpUrl,
      mailFrom: 'scheduler@example.com',
      mailOutboxDir: '/nonexistent',
    } as ReportConfig;
    const mailer = new ReportMailer(config, logs.logger);
    cleanups.push(() => mailer.close());
    return new NoticeMailSender(pool, mailer, logs.logger, RETRY);
  }

  /** A run parked as the failed-queue consumer parks it: task and outbox row together. */
  async function park(failedAt: Date): Promise<void> {
    seq++;
    await sql(
      `WITH run AS (
         INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, status, container_id)
         VALUES ($1, $2, $3, 'failed', 'test') RETURNING id
       ), parked AS (
         INSERT INTO failed_task (execution_id, scheduler_id, type, payload, failed_reason, retry_count, failed_at)
         SELECT id, $1, 'report', '{}'::jsonb, 'boom', 3, $3 FROM run RETURNING id
       )
       INSERT INTO failure_notice_outbox (failed_task_id, scheduler_id)
       SELECT id, $1 FROM parked`,
      [schedulerId, `cron-mail-${seq}`, failedAt],
    );
  }

  async function succeed(): Promise<void> {
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, status, finished_at, container_id)
       VALUES ($1, 'cron-ok', now(), 'succeeded', now() + interval '1 minute', 'test')`,
      [schedulerId],
    );
    await sql(
      `UPDATE failure_notice_state SET last_failure_at = now() - interval '1 hour'`,
    );
  }

  const subjects = (server: TestSmtpServer) =>
    server.received.map(
      mail => /^Subject: (.*)$/m.exec(mail.raw.toString())?.[1] ?? '',
    );

  it('e-mails the owner a failure notice and a recovery notice through SMTP', async () => {
    const server = await smtp();
    const mails = sender(server.url);
    const start = at('2026-11-24T10:00:00Z');
    await park(start);
    await notices.dispatch(start);
    expect(await mails.send(start)).to.containDeep({sent: 1});
    await succeed();
    await notices.dispatch(plus(start, 1));
    expect(await mails.send(plus(start, 1))).to.containDeep({sent: 1});
    expect(await mails.send(plus(start, 2))).to.containDeep({sent: 0});

    expect(server.received.map(mail => mail.to)).to.deepEqual([
      ['owner@example.com'],
      ['owner@example.com'],
    ]);
    const [failure, recovery] = subjects(server);
    expect(failure).to.match(new RegExp(`^Scheduler ${schedulerId} failed`));
    expect(recovery).to.match(
      new RegExp(`^Scheduler ${schedulerId} recovered`),
    );
    expect(server.received[0].raw.toString()).to.match(
      /Re-drive it as failed\s+task \d+/,
    );
  });

  it('sends once when the process dies between writing the notice and sending its e-mail', async () => {
    const server = await smtp();
    const start = at('2026-11-24T10:00:00Z');
    await park(start);
    await notices.dispatch(start);
    // "Crash": the notice and its mail row committed, nothing sent.
    expect(
      await sql(`SELECT 1 FROM notice_mail_outbox WHERE status = 'pending'`),
    ).to.have.length(1);
    expect(server.received).to.have.length(0);
    // Restarted processes (two replicas) send it, once.
    await Promise.all([
      sender(server.url).send(plus(start, 1)),
      sender(server.url).send(plus(start, 1)),
    ]);
    await sender(server.url).send(plus(start, 2));
    expect(server.received).to.have.length(1);
  });

  it('retries with a bounded backoff while SMTP is down, and delivers once it is up', async () => {
    const down = await givenSmtpServer();
    const port = Number(new URL(down.url).port);
    await down.close();
    const mails = sender(down.url);
    const start = at('2026-11-24T10:00:00Z');
    await park(start);
    await notices.dispatch(start);

    expect(await mails.send(start)).to.containDeep({sent: 0, failed: 1});
    // Not due again before the first delay.
    expect(await mails.send(plus(start, 0.5))).to.containDeep({failed: 0});
    expect(await mails.send(plus(start, 1))).to.containDeep({failed: 1});
    const [row] = await sql<{attempts: number; next_attempt_at: Date}>(
      `SELECT attempts, next_attempt_at FROM notice_mail_outbox`,
    );
    expect(row.attempts).to.equal(2);
    expect(row.next_attempt_at.toISOString()).to.equal(
      plus(start, 3).toISOString(),
    );
    expect(logs.find('Notice e-mail not sent; retried later')).to.have.length(
      2,
    );

    const up = await smtp({port});
    expect(await mails.send(plus(start, 2))).to.containDeep({sent: 0});
    expect(await mails.send(plus(start, 3))).to.containDeep({sent: 1});
    await mails.send(plus(start, 60));
    expect(up.received).to.have.length(1);
  });

  it('abandons a mail after its last attempt, with an error log line', async () => {
    const down = await givenSmtpServer();
    await down.close();
    const mails = sender(down.url);
    const start = at('2026-11-24T10:00:00Z');
    await park(start);
    await notices.dispatch(start);
    // RETRY: 5 attempts, 1 + 2 + 4 + 8 minutes apart.
    for (const minutes of [0, 1, 3, 7, 15]) {
      expect(await mails.send(plus(start, minutes))).to.containDeep({
        failed: 1,
      });
    }
    expect(await mails.send(plus(start, 600))).to.containDeep({failed: 0});
    const [row] = await sql<{status: string; attempts: number}>(
      `SELECT status, attempts FROM notice_mail_outbox`,
    );
    expect(row).to.deepEqual({status: 'abandoned', attempts: 5});
    expect(
      logs.find('Notice e-mail abandoned after its last attempt'),
    ).to.have.length(1);
  });

  it('e-mails the missed-runs notice to the owner and the group when notify.group', async () => {
    const server = await smtp();
    const [{id: group}] = await sql<{id: number}>(
      `INSERT INTO user_group (name) VALUES ('ops') RETURNING id`,
    );
    await sql(
      `INSERT INTO app_user (email, name, password_hash, role, group_id)
       VALUES ('member@example.com', 'Member', 'x', 'viewer', $1)`,
      [group],
    );
    await sql(
      `UPDATE scheduler SET group_id = $1, notify = notify || '{"group": true}' WHERE id = $2`,
      [group, schedulerId],
    );
    const start = at('2026-11-24T10:00:00Z');
    const told = await noticeMissedRuns(
      pool,
      new Map([[schedulerId, 10]]),
      start,
      plus(start, 9),
    );
    expect(told).to.equal(2);
    await sender(server.url).send(plus(start, 10));
    expect(server.received.map(mail => mail.to[0]).sort()).to.deepEqual([
      'member@example.com',
      'owner@example.com',
    ]);
    expect(subjects(server)[0]).to.match(/missed 10 run\(s\)/);
  });

  it('sends nothing when notify.email is false, and skips a user without an address with a log line', async () => {
    const server = await smtp();
    const mails = sender(server.url);
    await sql(
      `UPDATE scheduler SET notify = notify || '{"email": false}' WHERE id = $1`,
      [schedulerId],
    );
    const start = at('2026-11-24T10:00:00Z');
    await park(start);
    await notices.dispatch(start);
    expect(await ownerNotices()).to.equal(1);
    expect(await sql(`SELECT 1 FROM notice_mail_outbox`)).to.have.length(0);
    await mails.send(start);
    expect(server.received).to.have.length(0);

    await sql(`UPDATE app_user SET email = '' WHERE id = $1`, [owner]);
    await sql(
      `UPDATE scheduler SET notify = notify || '{"email": true}' WHERE id = $1`,
      [schedulerId],
    );
    await park(plus(start, 20));
    await notices.dispatch(plus(start, 20));
    expect(await mails.send(plus(start, 20))).to.containDeep({skipped: 1});
    expect(server.received).to.have.length(0);
    expect(
      logs.find('Notice e-mail skipped: the user has no e-mail address'),
    ).to.have.length(1);
  });

  it("the consumer role's notice timer sends the e-mail after the notice pass", async () => {
    const server = await smtp();
    await park(new Date());
    // The timer the consumer role runs, with a short period for the test.
    const timer = new NoticeTimer(notices, logs.logger, sender(server.url), 50);
    cleanups.push(() => timer.stop());
    timer.start();
    await eventually(() => server.received.length === 1 || undefined);
    expect(server.received[0].to).to.deepEqual(['owner@example.com']);
  });

  const ownerNotices = async () =>
    (await sql(`SELECT 1 FROM notification WHERE user_id = $1`, [owner]))
      .length;
});
