import {CronExpressionParser} from 'cron-parser';
import {normalizeCron} from './cron-syntax';
import type {WallTime} from './wall-clock';

/**
 * A cron expression expanded once into lookup tables, so matching a minute is
 * five array reads instead of a cron-parser call (50-280 µs each).
 */
export interface CompiledCron {
  /** As the user wrote it (stored so). */
  readonly expression: string;
  /** The same in five numeric fields: macros expanded, names as numbers. */
  readonly numeric: string;
  readonly minutes: Uint8Array;
  readonly hours: Uint8Array;
  readonly daysOfMonth: Uint8Array;
  readonly months: Uint8Array;
  readonly daysOfWeek: Uint8Array;
  /** Vixie cron: a day field is restricted unless it starts with `*`. */
  readonly dayOfMonthRestricted: boolean;
  readonly dayOfWeekRestricted: boolean;
  /**
   * Vixie cron's "wildcard job": minute or hour starts with `*`. Such jobs
   * follow real time across DST changes; fixed-time jobs follow the wall clock.
   */
  readonly followsRealTime: boolean;
}

export class InvalidCronError extends Error {
  override name = 'InvalidCronError';
  constructor(
    readonly expression: string,
    readonly problems: string[],
  ) {
    super(`invalid cron expression "${expression}": ${problems.join('; ')}`);
  }
}

function table(size: number, values: readonly (number | string)[]): Uint8Array {
  const lookup = new Uint8Array(size);
  for (const value of values) lookup[Number(value) % size] = 1;
  return lookup;
}

/** Validates with the service's dialect, expands with cron-parser. */
export function compileCron(expression: string): CompiledCron {
  const normalized = normalizeCron(expression);
  if (normalized.problems) {
    throw new InvalidCronError(expression, normalized.problems);
  }
  const text = normalized.fields;
  const numeric = text.join(' ');
  let fields;
  try {
    ({fields} = CronExpressionParser.parse(numeric));
  } catch (error) {
    // e.g. "0 0 30 2 *": well-formed, but a date that never exists.
    throw new InvalidCronError(expression, [(error as Error).message]);
  }
  return {
    expression,
    numeric,
    minutes: table(60, fields.minute.values),
    hours: table(24, fields.hour.values),
    daysOfMonth: table(32, fields.dayOfMonth.values),
    months: table(13, fields.month.values),
    // cron-parser may list Sunday as 7 as well as 0; % 7 folds them together.
    daysOfWeek: table(7, fields.dayOfWeek.values),
    dayOfMonthRestricted: !normalized.starred[2],
    dayOfWeekRestricted: !normalized.starred[4],
    followsRealTime: normalized.starred[0] || normalized.starred[1],
  };
}

/**
 * Standard cron semantics, including the day rule: when both day-of-month
 * and day-of-week are restricted, either one matching is enough.
 */
export function cronMatches(cron: CompiledCron, wall: WallTime): boolean {
  if (!cron.minutes[wall.minute] || !cron.hours[wall.hour]) return false;
  return cronMatchesDay(cron, wall);
}

/** Whether any minute of the wall clock's day can match (month and day rule). */
export function cronMatchesDay(cron: CompiledCron, wall: WallTime): boolean {
  if (!cron.months[wall.month]) return false;
  const dayOfMonth = cron.daysOfMonth[wall.day] === 1;
  const dayOfWeek = cron.daysOfWeek[wall.dayOfWeek] === 1;
  if (cron.dayOfMonthRestricted && cron.dayOfWeekRestricted) {
    return dayOfMonth || dayOfWeek;
  }
  return dayOfMonth && dayOfWeek;
}

const CACHE_LIMIT = 100_000;

/**
 * Compiled expressions keyed by their text: the only cache the producer
 * keeps, since an expression's meaning never changes. Invalid ones are
 * remembered too, so a bad stored expression costs one parse, not one per tick.
 */
export class CronCache {
  private readonly entries = new Map<string, CompiledCron | InvalidCronError>();

  get(expression: string): CompiledCron | InvalidCronError {
    let entry = this.entries.get(expression);
    if (entry === undefined) {
      if (this.entries.size >= CACHE_LIMIT) this.entries.clear();
      try {
        entry = compileCron(expression);
      } catch (error) {
        if (!(error instanceof InvalidCronError)) throw error;
        entry = error;
      }
      this.entries.set(expression, entry);
    }
    return entry;
  }

  get size(): number {
    return this.entries.size;
  }
}
