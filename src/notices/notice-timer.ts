import type {Logger} from '../logging/logger';
import type {FailureNotices} from './failure-notices';
import type {NoticeMailSender} from './notice-mail-sender';

/** How often the consumer role sends the notices (and their e-mails) the outboxes hold. */
export const NOTICE_PASS_MS = 15_000;

/**
 * Runs a notice pass every NOTICE_PASS_MS with the real clock (the only
 * clock read of notices), then the e-mail copies due; a failed pass is logged
 * and the next one retries, since the outboxes keep what was not sent.
 */
export class NoticeTimer {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly notices: FailureNotices,
    private readonly logger: Logger,
    private readonly mails?: NoticeMailSender,
    private readonly everyMs = NOTICE_PASS_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.pass().finally(() => {
        this.running = undefined;
      });
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async pass(): Promise<void> {
    try {
      await this.notices.dispatch(new Date());
    } catch (error) {
      this.logger.error('Failure notice pass failed; retried next pass', {
        error: (error as Error).message,
      });
    }
    try {
      await this.mails?.send(new Date());
    } catch (error) {
      this.logger.error('Notice e-mail pass failed; retried next pass', {
        error: (error as Error).message,
      });
    }
  }
}
