export const MINUTE_MS = 60_000;

/** A stored or sent timestamp as a Date, or null when there is none. */
export const instantOrNull = (
  value: Date | string | null | undefined,
): Date | null =>
  value === undefined || value === null ? null : new Date(value);

/**
 * A stored timestamp as a Date when it is a real instant, else null: the
 * database's 'infinity' arrives from node-postgres as a number, and a bound
 * of infinity is no bound.
 */
export const finiteInstant = (value: unknown): Date | null =>
  value instanceof Date && Number.isFinite(value.getTime()) ? value : null;

/** The start of the minute `instant` falls in. */
export function minuteSlot(instant: Date): Date {
  return new Date(Math.floor(instant.getTime() / MINUTE_MS) * MINUTE_MS);
}

export function addMinutes(slot: Date, minutes: number): Date {
  return new Date(slot.getTime() + minutes * MINUTE_MS);
}

export interface SlotPlan {
  /** Slots to evaluate, oldest first, ending with the current one. */
  due: Date[];
  /** Slots missed for longer than the catch-up window: not fired. */
  skipped: Date[];
}

/**
 * Which minute slots a tick at `now` evaluates, given the last slot already
 * evaluated: every slot since then, so a late tick misses nothing, but none
 * older than `catchUpMinutes` before the current minute (0 = current only).
 * With no history, the catch-up window itself is evaluated (claims dedupe).
 */
export function planSlots(
  now: Date,
  lastEvaluated: Date | undefined,
  catchUpMinutes: number,
  maxSkippedListed = 1440,
): SlotPlan {
  const current = minuteSlot(now);
  const windowStart = addMinutes(current, -catchUpMinutes);
  const first = lastEvaluated
    ? addMinutes(minuteSlot(lastEvaluated), 1)
    : windowStart;
  const due: Date[] = [];
  const skipped: Date[] = [];
  const skippedFrom = Math.max(
    first.getTime(),
    windowStart.getTime() - maxSkippedListed * MINUTE_MS,
  );
  for (let t = skippedFrom; t < windowStart.getTime(); t += MINUTE_MS) {
    skipped.push(new Date(t));
  }
  for (
    let t = Math.max(first.getTime(), windowStart.getTime());
    t <= current.getTime();
    t += MINUTE_MS
  ) {
    due.push(new Date(t));
  }
  return {due, skipped};
}

/** Milliseconds from `now` to the start of the next minute. */
export function msUntilNextMinute(now: Date): number {
  return MINUTE_MS - (now.getTime() % MINUTE_MS);
}
