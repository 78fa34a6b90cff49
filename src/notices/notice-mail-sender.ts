import type {Pool, PoolClient} from 'pg';
import type {Logger} from '../logging/logger';
import type {MailReceipt, ReportMail} from '../reports/delivery/report-mailer';
import {cutError} from './notice-policy';

/** What the sender needs of the project's mail delivery (ReportMailer). */
export interface NoticeMailTransport {
  send(mail: ReportMail): Promise<MailReceipt>;
}

export interface NoticeMailRetry {
  /** The wait after the first failed attempt; it doubles after each. */
  firstDelayMs: number;
  /** The longest wait between two attempts: the backoff is bounded. */
  maxDelayMs: number;
  /** After this many failed attempts the mail is abandoned (and logged). */
  maxAttempts: number;
}

/** 1, 2, 4, ... 60 minutes: twelve attempts span about six hours. */
export const NOTICE_MAIL_RETRY: NoticeMailRetry = {
  firstDelayMs: 60_000,
  maxDelayMs: 60 * 60_000,
  maxAttempts: 12,
};

export interface MailPassReport {
  sent: number;
  skipped: number;
  failed: number;
}

interface Pending {
  notification_id: string;
  attempts: number;
  title: string;
  body: string | null;
  email: string;
  user_id: number;
}

/** Pure: the wait before attempt `attempts + 1`, after `attempts` failed ones. */
export function retryDelayMs(attempts: number, retry: NoticeMailRetry): number {
  return Math.min(
    retry.firstDelayMs * 2 ** Math.max(0, attempts - 1),
    retry.maxDelayMs,
  );
}

/**
 * Sends the e-mail copies of notices that notice_mail_outbox holds. Each
 * mail is locked, sent and marked in its own transaction, so two processes
 * never send the same row at once and a crash before the mark leaves it
 * pending: the only duplicate possible is a crash after the SMTP server
 * accepted the message and before the mark committed (at least once; the
 * copy carries the same Message-ID). A failed send waits a doubling, bounded
 * delay and ends the pass: the server is likely down for the rest too.
 * Time is an argument (`now`): the caller's clock.
 */
export class NoticeMailSender {
  constructor(
    private readonly pool: Pool,
    private readonly transport: NoticeMailTransport,
    private readonly logger: Logger,
    private readonly retry: NoticeMailRetry = NOTICE_MAIL_RETRY,
    private readonly batch = 100,
  ) {}

  async send(now: Date): Promise<MailPassReport> {
    const report = {sent: 0, skipped: 0, failed: 0};
    for (let i = 0; i < this.batch; i++) {
      const outcome = await this.sendOne(now);
      if (outcome === 'none') break;
      report[outcome]++;
      if (outcome === 'failed') break;
    }
    if (report.sent + report.skipped + report.failed > 0) {
      this.logger.info('Notice e-mails handled', {...report});
    }
    return report;
  }

  private async sendOne(
    now: Date,
  ): Promise<'sent' | 'skipped' | 'failed' | 'none'> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const {rows} = await client.query<Pending>(
        `SELECT o.notification_id, o.attempts, n.title, n.body, u.email, u.id AS user_id
           FROM notice_mail_outbox o
           JOIN notification n ON n.id = o.notification_id
           JOIN app_user u ON u.id = n.user_id
          WHERE o.status = 'pending'
            AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= $1)
          ORDER BY o.notification_id
          LIMIT 1
          FOR UPDATE OF o SKIP LOCKED`,
        [now],
      );
      if (rows.length === 0) {
        await client.query('COMMIT');
        return 'none';
      }
      const outcome = await this.deliver(client, rows[0], now);
      await client.query('COMMIT');
      return outcome;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private async deliver(
    client: PoolClient,
    mail: Pending,
    now: Date,
  ): Promise<'sent' | 'skipped' | 'failed'> {
    const id = mail.notification_id;
    if (mail.email.trim() === '') {
      this.logger.info(
        'Notice e-mail skipped: the user has no e-mail address',
        {
          notification_id: Number(id),
          user_id: mail.user_id,
        },
      );
      await this.mark(client, id, 'skipped', mail.attempts, null, null);
      return 'skipped';
    }
    try {
      await this.transport.send({
        to: [mail.email],
        subject: mail.title,
        text: mail.body ?? mail.title,
        messageId: `<notice-${id}@scheduler.invalid>`,
      });
      await client.query(
        `UPDATE notice_mail_outbox
            SET status = 'sent', attempts = attempts + 1, sent_at = $2, last_error = NULL
          WHERE notification_id = $1`,
        [id, now],
      );
      return 'sent';
    } catch (error) {
      const attempts = mail.attempts + 1;
      const message = cutError((error as Error).message);
      const abandoned = attempts >= this.retry.maxAttempts;
      const next = new Date(now.getTime() + retryDelayMs(attempts, this.retry));
      if (abandoned) {
        this.logger.error('Notice e-mail abandoned after its last attempt', {
          notification_id: Number(id),
          attempts,
          error: message,
        });
      } else {
        this.logger.warn('Notice e-mail not sent; retried later', {
          notification_id: Number(id),
          attempts,
          next_attempt_at: next.toISOString(),
          error: message,
        });
      }
      await this.mark(
        client,
        id,
        abandoned ? 'abandoned' : 'pending',
        attempts,
        abandoned ? null : next,
        message,
      );
      return 'failed';
    }
  }

  private async mark(
    client: PoolClient,
    id: string,
    status: 'skipped' | 'pending' | 'abandoned',
    attempts: number,
    next: Date | null,
    error: string | null,
  ): Promise<void> {
    await client.query(
      `UPDATE notice_mail_outbox
          SET status = $2, attempts = $3, next_attempt_at = $4, last_error = $5
        WHERE notification_id = $1`,
      [id, status, attempts, next, error],
    );
  }
}
