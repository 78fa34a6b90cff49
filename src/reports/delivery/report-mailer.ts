import {randomUUID} from 'node:crypto';
import {createWriteStream} from 'node:fs';
import {chmod, mkdir} from 'node:fs/promises';
import path from 'node:path';
import type {Readable} from 'node:stream';
import {pipeline} from 'node:stream/promises';
import nodemailer, {Transporter} from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import type {ReportConfig} from '../../config';
import type {Logger} from '../../logging/logger';
import {pruneOutbox} from './outbox-pruner';

export interface ReportMail {
  to: string[];
  subject: string;
  text: string;
  /** Absent when the file was too large to attach (the text says so). */
  attachment?: {filename: string; path: string; contentType: string};
  /** A stable Message-ID, so a copy sent again after a crash can be told apart as the same. */
  messageId?: string;
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
 * Messages are streamed, never held whole in memory; the outbox is private
 * (folder 0700, files 0600) and pruned by age and size after each write.
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
      : nodemailer.createTransport({streamTransport: true, buffer: false});
  }

  async send(mail: ReportMail): Promise<MailReceipt> {
    const info = await this.transporter.sendMail({
      from: this.config.mailFrom,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      ...(mail.messageId ? {messageId: mail.messageId} : {}),
      attachments: mail.attachment ? [mail.attachment] : [],
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
    const dir = this.config.mailOutboxDir;
    await mkdir(dir, {recursive: true, mode: 0o700});
    await chmod(dir, 0o700);
    const file = path.join(
      dir,
      `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.eml`,
    );
    await pipeline(
      (info as unknown as {message: Readable}).message,
      createWriteStream(file, {mode: 0o600}),
    );
    const pruned = await pruneOutbox(dir, {
      maxAgeMs: this.config.outboxMaxAgeMs,
      maxBytes: this.config.outboxMaxBytes,
    });
    if (pruned > 0) this.logger.info('Mail outbox pruned', {deleted: pruned});
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
