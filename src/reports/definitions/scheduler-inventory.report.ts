import {loadAllCalendars} from '../../calendars/all-calendars';
import {TurnSharer} from '../../process/turn-sharer';
import {CronCache} from '../../scheduling/compiled-cron';
import {nextRun, NextRun, NextRunContext} from '../../scheduling/next-run';
import {finiteInstant, minuteSlot} from '../../scheduling/slots';
import type {ReportDefinition, ReportRow} from '../report';
import {
  optionalBoolean,
  optionalEnumList,
  refuseUnknownParams,
} from '../params-check';
import {pagedRows} from './paged-query';

const KINDS = ['report', 'worker', 'reminder', 'http'] as const;

export interface InventoryParams {
  active_only: boolean;
  kind?: string[];
}

interface SchedulerRow {
  id: number;
  description: string;
  kind: string;
  task_id: number;
  schedule: string | null;
  date_time: Date | null;
  timezone: string | null;
  status: boolean;
  stay_alive: boolean;
  starts_at: Date | null;
  ends_at: Date | null;
  calendar_ids: number[] | null;
  user_id: number | null;
}

const MEMO_LIMIT = 100_000;

/** Fires looked at per scheduler for one no calendar skips. */
const MAX_CONSIDERED = 1000;

/**
 * Next runs computed once per distinct timing: schedulers that share an
 * expression, zone, window and calendars share the answer. The producer's
 * matcher costs up to a few milliseconds for a sparse expression in a zone
 * other than UTC (more when calendars skip many fires), and an inventory of
 * thousands of schedulers holds few distinct timings. A starts_at already
 * past changes no answer, so it is left out of the timing ("start now" gives
 * every scheduler its own).
 */
class SharedNextRuns {
  private readonly memo = new Map<string, NextRun>();
  private readonly currentMinute: number;

  constructor(
    private readonly now: Date,
    private readonly context: NextRunContext,
  ) {
    this.currentMinute = minuteSlot(now).getTime();
  }

  async of(scheduler: SchedulerRow): Promise<NextRun> {
    const startsAt = finiteInstant(scheduler.starts_at);
    const timing = {
      ...scheduler,
      starts_at:
        startsAt && startsAt.getTime() > this.currentMinute ? startsAt : null,
      ends_at: finiteInstant(scheduler.ends_at),
    };
    const key = JSON.stringify([
      timing.schedule,
      finiteInstant(timing.date_time)?.getTime(),
      timing.timezone,
      timing.status,
      timing.stay_alive,
      timing.starts_at?.getTime(),
      timing.ends_at?.getTime(),
      timing.calendar_ids,
    ]);
    let next = this.memo.get(key);
    if (!next) {
      if (this.memo.size >= MEMO_LIMIT) this.memo.clear();
      next = await nextRun(timing, this.now, this.context);
      this.memo.set(key, next);
    }
    return next;
  }
}

/** Every scheduler with its task, timing, owner and next run time. */
export const SchedulerInventoryReport: ReportDefinition<InventoryParams> = {
  title: 'Scheduler inventory',
  description:
    'Schedulers with their next run (report_params: active_only, kind[])',
  columns: [
    {key: 'id', header: 'Scheduler', type: 'integer', width: 7},
    {key: 'description', header: 'Description', type: 'text', width: 26},
    {key: 'kind', header: 'Kind', type: 'text', width: 7},
    {key: 'task_id', header: 'Task', type: 'integer', width: 5},
    {key: 'schedule', header: 'Schedule', type: 'text', width: 18},
    {key: 'timezone', header: 'Time zone', type: 'text', width: 14},
    {key: 'status', header: 'Active', type: 'text', width: 6},
    {key: 'user_id', header: 'Owner', type: 'integer', width: 6},
    {key: 'next_run_at', header: 'Next run', type: 'datetime', width: 19},
    {key: 'note', header: 'Note', type: 'text', width: 20},
  ],
  parseParams(raw) {
    refuseUnknownParams(raw, ['active_only', 'kind']);
    return {
      active_only: optionalBoolean(raw, 'active_only', false),
      kind: optionalEnumList(raw, 'kind', KINDS),
    };
  },
  async *rows(params, {db, now, timeZone, catchUpMinutes, turns}) {
    // One sharer for every row: rows of a few ms each (a rare schedule's
    // next fire, calendars) add up to seconds, on the API's event loop when
    // the report is instant. The look aheads pass within a row as well.
    const sharer = turns ?? new TurnSharer();
    // The next run as next-runs and the producer see it: calendars read
    // once for the whole report, each cron expression compiled once.
    const cronCache = new CronCache();
    const {calendars} = await loadAllCalendars(db, cronCache);
    const nextRuns = new SharedNextRuns(now, {
      timeZone,
      catchUpMinutes,
      maxConsidered: MAX_CONSIDERED,
      calendars,
      cronCache,
      turns: sharer,
    });
    const schedulers = pagedRows<SchedulerRow>(
      db,
      `SELECT * FROM (
         SELECT id, description,
                CASE WHEN report_id IS NOT NULL THEN 'report'
                     WHEN worker_id IS NOT NULL THEN 'worker'
                     WHEN reminder_id IS NOT NULL THEN 'reminder'
                     ELSE 'http' END AS kind,
                COALESCE(report_id, worker_id, reminder_id, http_target_id) AS task_id,
                schedule, date_time, timezone, status, stay_alive,
                starts_at, ends_at, calendar_ids, user_id
           FROM scheduler) s
        WHERE id > $1 AND (NOT $3::boolean OR status)
          AND ($4::text[] IS NULL OR kind = ANY($4))
        ORDER BY id
        LIMIT $2`,
      [params.active_only, params.kind ?? null],
    );
    for await (const scheduler of schedulers) {
      const next = await nextRuns.of(scheduler);
      const row: ReportRow = {
        id: scheduler.id,
        description: scheduler.description,
        kind: scheduler.kind,
        task_id: scheduler.task_id,
        schedule:
          scheduler.schedule ??
          (scheduler.stay_alive
            ? 'stay-alive'
            : (finiteInstant(scheduler.date_time)?.toISOString() ??
              (scheduler.date_time === null
                ? null
                : String(scheduler.date_time)))),
        // The stored zone even when the producer cannot read it (the note says so).
        timezone: scheduler.timezone ?? timeZone,
        status: scheduler.status ? 'yes' : 'no',
        user_id: scheduler.user_id,
        next_run_at: next.at,
        note: next.problem ?? null,
      };
      yield row;
      if (sharer.due()) await sharer.pass();
    }
  },
};
