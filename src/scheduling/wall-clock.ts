/** A minute as a clock on the wall of some time zone shows it. */
export interface WallTime {
  year: number;
  /** 1-12 */
  month: number;
  /** 1-31 */
  day: number;
  hour: number;
  minute: number;
  /** 0-6, Sunday is 0 */
  dayOfWeek: number;
}

const MINUTE_MS = 60_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

export function isValidTimeZone(timeZone: string): boolean {
  if (!/^[A-Za-z0-9_+/-]{1,64}$/.test(timeZone)) return false;
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

function fromUtcFields(date: Date): WallTime {
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    dayOfWeek: date.getUTCDay(),
  };
}

/** The wall-clock minute of `instant` in `timeZone`. */
export function wallTimeAt(instant: Date, timeZone: string): WallTime {
  if (timeZone === 'UTC') return fromUtcFields(instant);
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(instant)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const asUtc = new Date(
    Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute),
  );
  return fromUtcFields(asUtc);
}

/** Minutes since the epoch as if the wall time were UTC: for wall-clock arithmetic. */
function wallMinute(wall: WallTime): number {
  return (
    Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute) /
    MINUTE_MS
  );
}

const EARLIER_OFFSETS_MINUTES = [30, 60, 120];

/** What one UTC minute slot means on the wall clock of a time zone. */
export interface SlotClock {
  wall: WallTime;
  /** Wall minutes a spring-forward gap skipped just before this slot. */
  skipped: WallTime[];
  /** True in the second pass of a repeated (fall-back) wall-clock hour. */
  repeated: boolean;
}

export function slotClock(slot: Date, timeZone: string): SlotClock {
  const wall = wallTimeAt(slot, timeZone);
  if (timeZone === 'UTC') return {wall, skipped: [], repeated: false};
  const current = wallMinute(wall);
  const at = (minutesBefore: number) =>
    wallMinute(
      wallTimeAt(
        new Date(slot.getTime() - minutesBefore * MINUTE_MS),
        timeZone,
      ),
    );
  const repeated = EARLIER_OFFSETS_MINUTES.some(
    offset => at(offset) === current,
  );
  const previous = at(1);
  const skipped: WallTime[] = [];
  for (let minute = previous + 1; minute < current; minute++) {
    skipped.push(fromUtcFields(new Date(minute * MINUTE_MS)));
  }
  return {wall, skipped, repeated};
}
