import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import type {ReportConfig} from '../../config';
import {createPool} from '../../database/pg-pool';
import {FailureNotices} from '../../notices/failure-notices';
import {NoticeMailSender} from '../../notices/notice-mail-sender';
import {ReportMailer} from '../../reports/delivery/report-mailer';
import {LogCapture} from '../fixtures/log-capture';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';
import {insertSchedulers} from '../fixtures/test-producer';
import {givenSmtpServer} from '../fixtures/test-smtp';

/**
 * A hostile scheduler description or error text reaches the notice's title,
 * which becomes the e-mail's Subject: line breaks in it must not add headers
 * or recipients (review of issue 26).
 */
describe('notice e-mails: header injection', () => {
  let pool: Pool;
  const logs = new LogCapture();

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    pool = createPool(TEST_DATABASE_URL, logs.logger);
  });
  afterEach(() => pool.end());

  it('keeps a description with CRLF and Bcc: inside the Subject, sent to the owner only', async () => {
    const server = await givenSmtpServer({});
    const config = {
      smtpUrl: server.url,
      mailFrom: 'scheduler@example.com',
      mailOutboxDir: '/nonexistent',
    } as ReportConfig;
    const mailer = new ReportMailer(config, logs.logger);
    try {
      const [{id: owner}] = await sql<{id: number}>(
        `INSERT INTO app_user (email, name, password_hash, role)
         VALUES ('owner@example.com', 'Owner', 'x', 'operator') RETURNING id`,
      );
      const [schedulerId] = await insertSchedulers([{schedule: '* * * * *'}]);
      await sql(
        `UPDATE scheduler SET user_id = $1, notify = notify || '{"email": true}',
                description = E'Nightly\\r\\nBcc: victim@evil.example\\r\\n\\r\\nforged body'
          WHERE id = $2`,
        [owner, schedulerId],
      );
      const failedAt = new Date('2026-11-24T10:00:00Z');
      await sql(
        `WITH run AS (
           INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, status, container_id)
           VALUES ($1, 'cron-x', $2, 'failed', 'test') RETURNING id
         ), parked AS (
           INSERT INTO failed_task (execution_id, scheduler_id, type, payload, failed_reason, retry_count, failed_at)
           SELECT id, $1, 'report', '{}'::jsonb, E'boom\\r\\nX-Injected: 1', 3, $2 FROM run RETURNING id
         )
         INSERT INTO failure_notice_outbox (failed_task_id, scheduler_id)
         SELECT id, $1 FROM parked`,
        [schedulerId, failedAt],
      );
      await new FailureNotices(pool, 15 * 60_000, logs.logger).dispatch(
        failedAt,
      );
      const sender = new NoticeMailSender(pool, mailer, logs.logger);
      expect(await sender.send(failedAt)).to.containDeep({sent: 1});
      expect(server.received).to.have.length(1);
      const [mail] = server.received;
      expect(mail.to).to.deepEqual(['owner@example.com']);
      const raw = mail.raw.toString();
      const headers = raw.slice(0, raw.search(/\r?\n\r?\n/));
      expect(headers).to.not.match(/^Bcc:/im);
      expect(headers).to.not.match(/^X-Injected:/im);
      expect(headers).to.match(/^Subject: /m);
    } finally {
      mailer.close();
      await server.close();
    }
  });
});
