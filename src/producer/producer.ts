import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import type {Logger} from '../logging/logger';
import type {TaskPublisher} from '../queue/task-publisher';
import {CronCache} from '../scheduling/compiled-cron';
import {planSlots} from '../scheduling/slots';
import {loadCandidates} from './candidate';
import {publishClaims} from './claim-publisher';
import {claimDailyCleanup, deleteOldExecutions} from './cleanup';
import {countDuePerScheduler, evaluateDue} from './due-evaluator';
import {claimRuns} from './execution-claimer';
import type {AfterClaimFaultPoint} from './fault-point';
import {sweepUnpublished} from './sweeper';

export type ProducerConfig = Pick<
  AppConfig,
  'containerId' | 'cronTimeZone' | 'cronCatchUpMinutes' | 'cronSweepAfterMs'
>;

export interface TickReport {
  slots: number;
  due: number;
  claimed: number;
  already_claimed: number;
  published: number;
  invalid: number;
  swept: number;
  duration_ms: number;
}

/**
 * One producer instance. `tick(now)` evaluates every minute slot since the
 * last one it evaluated, claims the due runs and publishes what it claimed.
 * Time is an argument: only the ticker reads the clock.
 */
export class Producer {
  private lastEvaluated?: Date;
  private readonly cache = new CronCache();
  private readonly warnedInvalid = new Set<string>();

  constructor(
    private readonly pool: Pool,
    private readonly publisher: TaskPublisher,
    private readonly config: ProducerConfig,
    private readonly logger: Logger,
    /** Test-only (chaos suite): may kill the process between claim and publish. */
    private readonly afterClaim?: AfterClaimFaultPoint,
  ) {}

  async tick(now: Date): Promise<TickReport> {
    const started = process.hrtime.bigint();
    this.lastEvaluated ??= await this.sharedLastSlot();
    const plan = planSlots(
      now,
      this.lastEvaluated,
      this.config.cronCatchUpMinutes,
    );
    let report: Omit<TickReport, 'swept' | 'duration_ms'> = {
      slots: plan.due.length,
      due: 0,
      claimed: 0,
      already_claimed: 0,
      published: 0,
      invalid: 0,
    };
    if (plan.due.length > 0) {
      const candidates = await loadCandidates(this.pool);
      if (plan.skipped.length > 0) this.logSkipped(candidates, plan.skipped);
      const evaluation = evaluateDue(
        candidates,
        plan.due,
        this.config.cronTimeZone,
        this.cache,
      );
      this.logInvalid(evaluation.invalid);
      const claims = await claimRuns(
        this.pool,
        evaluation.due,
        now,
        this.config.containerId,
      );
      this.afterClaim?.(claims.length);
      const published = await publishClaims(
        this.pool,
        this.publisher,
        claims,
        now,
      );
      this.lastEvaluated = plan.due[plan.due.length - 1];
      await this.saveLastSlot(this.lastEvaluated);
      report = {
        slots: plan.due.length,
        due: evaluation.due.length,
        claimed: claims.length,
        already_claimed: evaluation.due.length - claims.length,
        published,
        invalid: evaluation.invalid.length,
      };
    }
    const swept = await this.sweep(now);
    await this.cleanUp(now);
    const full: TickReport = {
      ...report,
      swept,
      duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
    };
    this.logger.info('Tick completed', {
      ...full,
      duration_ms: Math.round(full.duration_ms),
    });
    return full;
  }

  private async sweep(now: Date): Promise<number> {
    try {
      const swept = await sweepUnpublished(
        this.pool,
        this.publisher,
        now,
        this.config.cronSweepAfterMs,
      );
      if (swept > 0) {
        this.logger.warn('Republished claims left unpublished', {
          component: 'sweeper',
          count: swept,
        });
      }
      return swept;
    } catch (error) {
      this.logger.error('Sweep failed', {
        component: 'sweeper',
        error: (error as Error).message,
      });
      return 0;
    }
  }

  private async cleanUp(now: Date): Promise<void> {
    try {
      if (
        !(await claimDailyCleanup(this.pool, now, this.config.cronTimeZone))
      ) {
        return;
      }
      const deleted = await deleteOldExecutions(this.pool, now);
      this.logger.info('Old executions deleted', {
        component: 'cleanup',
        deleted,
      });
    } catch (error) {
      this.logger.error('Cleanup failed', {
        component: 'cleanup',
        error: (error as Error).message,
      });
    }
  }

  private logInvalid(
    invalid: Array<{
      schedulerId: number;
      expression: string;
      problems: string[];
    }>,
  ): void {
    for (const entry of invalid) {
      const key = `${entry.schedulerId}:${entry.expression}`;
      if (this.warnedInvalid.has(key)) continue;
      this.warnedInvalid.add(key);
      this.logger.warn('Invalid cron expression skipped', {
        scheduler_id: entry.schedulerId,
        schedule: entry.expression,
        problems: entry.problems,
      });
    }
  }

  private logSkipped(
    candidates: Parameters<typeof countDuePerScheduler>[0],
    skipped: Date[],
  ): void {
    const counts = countDuePerScheduler(
      candidates,
      skipped,
      this.config.cronTimeZone,
      this.cache,
    );
    const from = skipped[0].toISOString();
    const to = skipped[skipped.length - 1].toISOString();
    for (const [schedulerId, runs] of counts) {
      this.logger.warn(
        'Missed runs not fired (older than the catch-up window)',
        {
          scheduler_id: schedulerId,
          skipped_runs: runs,
          from,
          to,
        },
      );
    }
    this.logger.warn('Slots skipped after downtime', {
      slots: skipped.length,
      schedulers: counts.size,
      from,
      to,
    });
  }

  /** The newest slot any instance evaluated: tells downtime from a late tick. */
  private async sharedLastSlot(): Promise<Date | undefined> {
    const {rows} = await this.pool.query<{last_slot: Date | null}>(
      `SELECT last_slot FROM producer_state WHERE name = 'ticks'`,
    );
    return rows[0]?.last_slot ?? undefined;
  }

  private async saveLastSlot(slot: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', $1)
       ON CONFLICT (name) DO UPDATE
         SET last_slot = GREATEST(producer_state.last_slot, EXCLUDED.last_slot),
             updated_at = now()`,
      [slot],
    );
  }
}
