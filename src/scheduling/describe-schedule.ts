import cronstrue from 'cronstrue';
import {compileCron, InvalidCronError} from './compiled-cron';

/**
 * A cron expression in English words: `0 9 * * MON-FRI` reads "At 09:00 AM,
 * Monday through Friday". Checked with the service's own dialect first; read
 * as written (names and ranges read better), else in its numeric form.
 */
export function describeCron(expression: string): string {
  const {numeric} = compileCron(expression);
  for (const form of [expression.trim(), numeric]) {
    try {
      return cronstrue.toString(form, {verbose: false});
    } catch {
      // cronstrue reads less than the dialect: try the numeric form.
    }
  }
  throw new InvalidCronError(expression, ['cannot be described in words']);
}

/** A one-time run in words, in UTC. */
export function describeOnce(at: Date): string {
  return `Once, at ${at.toISOString()}`;
}
