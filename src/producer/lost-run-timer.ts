import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import type {Metrics} from '../metrics/metrics';
import type {TaskPublisher} from '../queue/task-publisher';
import {LostRunSweepOptions, sweepLostRuns} from './lost-run-sweep';

/** How often the lost-run sweep looks, at most (real milliseconds). */
export const LOST_RUN_SWEEP_INTERVAL_MS = 60_000;

/**
 * The lost-run sweep on its own timer, off the minute tick's path (it costs
 * the tick nothing at the boundary). A pass that fails is logged and the
 * next one tries again.
 */
export class LostRunTimer {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    private readonly pool: Pool,
    private readonly publisher: TaskPublisher,
    private readonly options: LostRunSweepOptions & {intervalMs: number},
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Idempotent: no further passes, and the one in flight finishes first. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: exported for tests. Each batch is counted once done, even if a later one fails. */
  async runOnce(): Promise<void> {
    const count = (result: string, n: number) =>
      this.metrics?.count('sweeps', {result}, n);
    try {
      const result = await sweepLostRuns(
        this.pool,
        this.publisher,
        this.logger,
        {
          ...this.options,
          onBatch: batch => {
            count('resent_lost', batch.resent);
            count('failed_lost', batch.failed);
            count('skipped_lost', batch.skipped);
          },
        },
      );
      count('deferred_lost', result.deferred);
    } catch (error) {
      this.logger.error('Lost-run sweep failed', {
        component: 'lost-run-sweep',
        error: (error as Error).message,
      });
    }
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.running = this.runOnce().then(() => {
        this.running = undefined;
        if (!this.stopped) this.schedule();
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }
}
