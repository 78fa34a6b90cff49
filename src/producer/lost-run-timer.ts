import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import type {Metrics} from '../metrics/metrics';
import type {TaskPublisher} from '../queue/task-publisher';
import {LostRunSweepOptions, sweepLostRuns} from './lost-run-sweep';
import {PeriodicPass} from './periodic-pass';

/** How often the lost-run sweep looks, at most (real milliseconds). */
export const LOST_RUN_SWEEP_INTERVAL_MS = 60_000;

/**
 * The lost-run sweep on its own timer, off the minute tick's path (it costs
 * the tick nothing at the boundary). A pass that fails is logged and the
 * next one tries again.
 */
export class LostRunTimer {
  private readonly passes = new PeriodicPass(
    () => this.runOnce(),
    () => this.options.intervalMs,
  );

  constructor(
    private readonly pool: Pool,
    private readonly publisher: TaskPublisher,
    private readonly options: LostRunSweepOptions & {intervalMs: number},
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {}

  start(): void {
    this.passes.start(this.options.intervalMs);
  }

  /** Idempotent: no further passes, and the one in flight finishes first. */
  stop(): Promise<void> {
    return this.passes.stop();
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
            count('failed_stuck', batch.stuck);
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
}
