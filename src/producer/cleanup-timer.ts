import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import {
  claimDailyCleanup,
  deleteOldExecutions,
  deleteOldSlotLeases,
  deleteOldWebhookDeliveries,
  retentionCutoff,
} from './cleanup';
import {PeriodicPass} from './periodic-pass';

export interface CleanupTimerOptions {
  timeZone: string;
  /** Time one pass may spend deleting before it yields until the next. */
  budgetMs: number;
  /** How often (real milliseconds) to look whether a pass is due. */
  intervalMs: number;
  batchSize?: number;
}

/**
 * The daily run-ledger cleanup, on its own timer so minute ticks never wait
 * for it. Every interval it asks whether today's cleanup is due and still
 * untaken (one instance wins per day, see `claimDailyCleanup`); the winner
 * deletes within a time budget per pass and resumes an unfinished cleanup at
 * the next passes. Time is an argument: `clock` decides the day.
 */
export class CleanupTimer {
  // An unfinished cleanup goes on soon; otherwise look again later.
  private readonly passes = new PeriodicPass(
    () => this.runOnce(),
    () => (this.pending ? 1000 : this.options.intervalMs),
  );
  /** The cutoff of a cleanup this instance won but has not finished. */
  private pending?: Date;

  constructor(
    private readonly pool: Pool,
    private readonly clock: () => Date,
    private readonly options: CleanupTimerOptions,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.passes.start(0);
  }

  /** Idempotent: no further passes, and the one in flight finishes first. */
  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One pass: exported for tests, which call it with their clock. */
  async runOnce(): Promise<void> {
    try {
      if (this.pending === undefined) {
        const now = this.clock();
        if (!(await claimDailyCleanup(this.pool, now, this.options.timeZone))) {
          return;
        }
        this.pending = retentionCutoff(now);
        await deleteOldSlotLeases(this.pool, now);
        await deleteOldWebhookDeliveries(this.pool, this.pending);
      }
      const result = await deleteOldExecutions(this.pool, this.pending, {
        budgetMs: this.options.budgetMs,
        batchSize: this.options.batchSize,
      });
      if (result.finished) this.pending = undefined;
      this.logger.info('Old executions deleted', {
        component: 'cleanup',
        deleted: result.deleted,
        finished: result.finished,
      });
    } catch (error) {
      this.logger.error('Cleanup failed', {
        component: 'cleanup',
        error: (error as Error).message,
      });
    }
  }
}
