import {randomUUID} from 'node:crypto';
import {mkdir, writeFile} from 'node:fs/promises';
import path from 'node:path';
import nodemailer, {Transporter} from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import type {ReportConfig} from '../../config';
import type {Logger} from '../../logging/logger';

export interface ReportMail {
  to: string[];
  subject: string;
  text: string;
  attachment: {filename: string; path: string; contentType: string};
}

export interface MailReceipt {
  transport: 'smtp' | 'file';
  message_id: string;
  recipients: number;
  /** Where the file transport wrote the message. */
  file?: string;
}

/** Bounded waits so a dead mail server fails the delivery instead of hanging it. */
const SMTP_TIMEOUTS = {
  connectionTimeout: 15_000,
  greetingTimeout: 15_000,
  socketTimeout: 60_000,
};

/**
 * Sends report e-mails through SMTP_URL, or, when it is unset, writes each
 * message as an .eml file to MAIL_OUTBOX_DIR (a real default for a single
 * machine) and logs where. The SMTP URL (it may hold a password) is never logged.
 */
export class ReportMailer {
  private readonly transporter: Transporter;

  constructor(
    private readonly config: ReportConfig,
    private readonly logger: Logger,
  ) {
    this.transporter = config.smtpUrl
      ? nodemailer.createTransport({
          url: config.smtpUrl,
          ...SMTP_TIMEOUTS,
        } satisfies SMTPTransport.Options)
      : nodemailer.createTransport({streamTransport: true, buffer: true});
  }

  async send(mail: ReportMail): Promise<MailReceipt> {
    const info = await this.transporter.sendMail({
      from: this.config.mailFrom,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      attachments: [mail.attachment],
    });
    if (this.config.smtpUrl) {
      this.logger.info('Report e-mail sent', {
        message_id: info.messageId,
        recipients: mail.to.length,
      });
      return {
        transport: 'smtp',
        message_id: info.messageId,
        recipients: mail.to.length,
      };
    }
    await mkdir(this.config.mailOutboxDir, {recursive: true});
    const file = path.join(
      this.config.mailOutboxDir,
      `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.eml`,
    );
    await writeFile(file, (info as unknown as {message: Buffer}).message);
    this.logger.info('Report e-mail written to file (SMTP_URL is not set)', {
      file,
      recipients: mail.to.length,
    });
    return {
      transport: 'file',
      message_id: info.messageId,
      recipients: mail.to.length,
      file,
    };
  }

  close(): void {
    this.transporter.close();
  }
}
