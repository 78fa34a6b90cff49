import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import type {Logger} from '../logging/logger';
import type {TaskPublisher} from '../queue/task-publisher';
import {CronCache} from '../scheduling/compiled-cron';
import {addMinutes, minuteSlot, planSlots} from '../scheduling/slots';
import {loadCandidates} from './candidate';
import {publishClaims} from './claim-publisher';
import {
  countDuePerScheduler,
  evaluateDue,
  InvalidRow,
  MissedOneTime,
} from './due-evaluator';
import {claimRuns} from './execution-claimer';
import type {AfterClaimFaultPoint} from './fault-point';
import {sweepUnpublished} from './sweeper';

export type ProducerConfig = Pick<
  AppConfig,
  | 'containerId'
  | 'cronTimeZone'
  | 'cronCatchUpMinutes'
  | 'cronSweepAfterMs'
  | 'cronSweepBudgetMs'
> & {
  /**
   * Clock milliseconds per real millisecond (above 1 only for the chaos
   * suite's fast clock). Claim ages are read from the database's real clock,
   * so the sweep delay, given in clock time, is divided by it.
   */
  clockRate?: number;
};

export interface TickReport {
  slots: number;
  due: number;
  claimed: number;
  already_claimed: number;
  /** Runs of overlap_policy skip schedulers recorded skipped: an earlier run was still going. */
  skipped_overlap: number;
  published: number;
  /** Schedulers skipped because their schedule, zone or date is unreadable. */
  invalid: number;
  /** One-time schedulers switched off: their moment is older than the catch-up window. */
  missed_one_time: number;
  swept: number;
  /** Unpublished claims older than the catch-up window, marked skipped. */
  skipped_stale: number;
  duration_ms: number;
}

type EvaluationCounts = Omit<
  TickReport,
  'swept' | 'skipped_stale' | 'duration_ms'
>;

/** Warned-about rows are remembered up to this many, then forgotten at once. */
const WARNED_LIMIT = 10_000;

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
    const report =
      plan.due.length > 0
        ? await this.evaluate(now, plan.due, plan.skipped)
        : {
            slots: 0,
            due: 0,
            claimed: 0,
            already_claimed: 0,
            skipped_overlap: 0,
            published: 0,
            invalid: 0,
            missed_one_time: 0,
          };
    const sweep = await this.sweep(now);
    const full: TickReport = {
      ...report,
      swept: sweep.republished,
      skipped_stale: sweep.skipped,
      duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
    };
    this.logger.info('Tick completed', {
      ...full,
      duration_ms: Math.round(full.duration_ms),
    });
    return full;
  }

  /** Evaluates the planned slots: claims and publishes what is due. */
  private async evaluate(
    now: Date,
    slots: Date[],
    skippedSlots: Date[],
  ): Promise<EvaluationCounts> {
    const candidates = await loadCandidates(this.pool);
    if (skippedSlots.length > 0) this.logSkipped(candidates, skippedSlots);
    const evaluation = evaluateDue(
      candidates,
      slots,
      this.dueWindow(now),
      this.config.cronTimeZone,
      this.cache,
    );
    this.logInvalid(evaluation.invalid);
    const missed = await this.disableMissed(evaluation.missed);
    const claims = await claimRuns(
      this.pool,
      evaluation.due,
      this.config.containerId,
    );
    this.afterClaim?.(claims.length);
    const toSend = claims.filter(claim => !claim.skipped);
    const published = await publishClaims(this.pool, this.publisher, toSend);
    this.lastEvaluated = slots[slots.length - 1];
    await this.saveLastSlot(this.lastEvaluated);
    return {
      slots: slots.length,
      due: evaluation.due.length,
      claimed: toSend.length,
      already_claimed: evaluation.due.length - claims.length,
      skipped_overlap: claims.length - toSend.length,
      published,
      invalid: evaluation.invalid.length,
      missed_one_time: missed,
    };
  }

  /** The minutes runs may still be fired for: the catch-up window. */
  private dueWindow(now: Date) {
    const current = minuteSlot(now);
    return {
      current,
      oldest: addMinutes(current, -this.config.cronCatchUpMinutes),
    };
  }

  private async sweep(
    now: Date,
  ): Promise<{republished: number; skipped: number}> {
    try {
      const result = await sweepUnpublished(this.pool, this.publisher, {
        olderThanMs:
          this.config.cronSweepAfterMs / (this.config.clockRate ?? 1),
        staleBefore: this.dueWindow(now).oldest,
        budgetMs: this.config.cronSweepBudgetMs,
      });
      if (result.republished > 0) {
        this.logger.warn('Republished claims left unpublished', {
          component: 'sweeper',
          count: result.republished,
        });
      }
      if (result.skipped > 0) {
        this.logger.warn('Claims older than the catch-up window skipped', {
          component: 'sweeper',
          count: result.skipped,
          catch_up_minutes: this.config.cronCatchUpMinutes,
        });
      }
      return result;
    } catch (error) {
      this.logger.error('Sweep failed', {
        component: 'sweeper',
        error: (error as Error).message,
      });
      return {republished: 0, skipped: 0};
    }
  }

  /**
   * Switches off one-time schedulers whose moment fell out of the catch-up
   * window unrun, with a reason the API shows; one re-armed meanwhile (another
   * date_time) is left alone.
   */
  private async disableMissed(missed: MissedOneTime[]): Promise<number> {
    if (missed.length === 0) return 0;
    const reason = `one-time run missed: its date_time is older than the catch-up window (${this.config.cronCatchUpMinutes} min)`;
    const {rows} = await this.pool.query<{id: number; date_time: Date}>(
      `UPDATE scheduler s SET status = false, status_reason = $3
         FROM unnest($1::int[], $2::timestamptz[]) AS m(id, date_time)
        -- JavaScript dates carry milliseconds; a stored date may carry micro.
        WHERE s.id = m.id AND s.status
          AND date_trunc('milliseconds', s.date_time) = m.date_time
        RETURNING s.id, s.date_time`,
      [
        missed.map(entry => entry.schedulerId),
        missed.map(entry => entry.dateTime),
        reason,
      ],
    );
    for (const row of rows) {
      this.logger.warn('One-time run missed (older than the catch-up window)', {
        scheduler_id: row.id,
        date_time: row.date_time.toISOString(),
        catch_up_minutes: this.config.cronCatchUpMinutes,
      });
    }
    return rows.length;
  }

  /** Once per scheduler and stored text: a bad row must not flood the log. */
  private logInvalid(invalid: InvalidRow[]): void {
    for (const entry of invalid) {
      const key = `${entry.schedulerId}:${entry.field}:${entry.value}`;
      if (this.warnedInvalid.has(key)) continue;
      if (this.warnedInvalid.size >= WARNED_LIMIT) this.warnedInvalid.clear();
      this.warnedInvalid.add(key);
      this.logger.warn(`Scheduler skipped: unreadable ${entry.field}`, {
        scheduler_id: entry.schedulerId,
        field: entry.field,
        [entry.field]: entry.value,
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
