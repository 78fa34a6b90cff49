import {CronExpressionParser} from 'cron-parser';
import {compileCron, InvalidCronError} from './compiled-cron';

export type NextRun =
  {at: Date; problem?: undefined} | {at: null; problem: string};

/**
 * The first run strictly after `after`: for a cron expression in `timeZone`
 * (checked with the producer's grammar first, expanded by cron-parser), or
 * the one-time `dateTime` while it lies ahead. Inactive schedulers and
 * stay-alive workers have none.
 */
export function nextRun(
  scheduler: {
    schedule: string | null;
    date_time: Date | null;
    status: boolean;
    stay_alive: boolean;
  },
  after: Date,
  timeZone: string,
): NextRun {
  if (scheduler.stay_alive) return {at: null, problem: 'stay-alive'};
  if (!scheduler.status) return {at: null, problem: 'inactive'};
  if (scheduler.schedule === null) {
    return scheduler.date_time && scheduler.date_time > after
      ? {at: scheduler.date_time}
      : {at: null, problem: 'one-time run is past'};
  }
  try {
    const {numeric} = compileCron(scheduler.schedule);
    const at = CronExpressionParser.parse(numeric, {
      currentDate: after,
      tz: timeZone,
    })
      .next()
      .toDate();
    return {at};
  } catch (error) {
    return {
      at: null,
      problem:
        error instanceof InvalidCronError
          ? `invalid schedule: ${error.problems.join('; ')}`
          : `no next run: ${(error as Error).message}`,
    };
  }
}
