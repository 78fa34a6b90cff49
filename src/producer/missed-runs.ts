import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import {noticeMissedRuns} from '../notices/missed-runs-notice';
import type {SlotCalendars} from '../scheduling/calendar-match';
import type {CronCache} from '../scheduling/compiled-cron';
import type {Candidate} from './candidate';
import {countDuePerScheduler, MissedOneTime} from './due-evaluator';

/**
 * What a producer does about runs it will not fire because their minute is
 * older than the catch-up window (CRON_CATCH_UP_MINUTES): it says so in the
 * log, to the owners and, for a one-time scheduler, on the scheduler itself.
 */
export class MissedRuns {
  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
    private readonly config: {
      cronCatchUpMinutes: number;
      cronTimeZone: string;
    },
    private readonly cache: CronCache,
  ) {}

  /**
   * Switches off one-time schedulers whose moment fell out of the catch-up
   * window unrun, with a reason the API shows; one re-armed meanwhile (another
   * date_time) is left alone. Returns how many were switched off.
   */
  async disableOneTime(missed: MissedOneTime[]): Promise<number> {
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

  /**
   * Logs the recurring runs of the skipped slots, per scheduler, and tells
   * each owner once per outage. A fire a calendar skips was never due, so
   * it is not counted. A failed notice is logged: the tick goes on.
   */
  async reportSkipped(
    candidates: Candidate[],
    skipped: Date[],
    calendars: SlotCalendars,
  ): Promise<void> {
    const counts = this.logSkipped(candidates, skipped, calendars);
    try {
      await noticeMissedRuns(
        this.pool,
        counts,
        skipped[0],
        skipped[skipped.length - 1],
      );
    } catch (error) {
      this.logger.error('Missed-runs notices failed', {
        error: (error as Error).message,
      });
    }
  }

  private logSkipped(
    candidates: Candidate[],
    skipped: Date[],
    calendars: SlotCalendars,
  ): Map<number, number> {
    const counts = countDuePerScheduler(
      candidates,
      skipped,
      this.config.cronTimeZone,
      this.cache,
      calendars,
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
    return counts;
  }
}
