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

/**
 * The wall-clock minute of `instant` in `timeZone`. A whole-minute instant
 * is read from the zone's offset over its UTC day (or hour, on a day the
 * offset changes), asked of Intl once per day and zone: a look five years
 * ahead walks hundreds of thousands of minutes, and Intl costs 5-10 µs a
 * call where this costs two lookups.
 */
export function wallTimeAt(instant: Date, timeZone: string): WallTime {
  if (timeZone === 'UTC') return fromUtcFields(instant);
  const time = instant.getTime();
  if (Number.isInteger(time / MINUTE_MS) && Math.abs(time) < LAST_MEMO_TIME) {
    const offset = steadyOffset(time, timeZone);
    if (offset !== null) return fromUtcFields(new Date(time + offset));
  }
  return intlWallTimeAt(instant, timeZone);
}

const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** Beyond it the next day's first minute is no valid Date: Intl answers. */
const LAST_MEMO_TIME = 8.64e15 - 2 * DAY_MS;
/** Offsets remembered over all zones before the memo starts afresh. */
const OFFSET_MEMO_LIMIT = 200_000;
/** Zone → the first or last minute of a UTC day or hour → the zone's offset then. */
const boundaryOffsets = new Map<string, Map<number, number>>();
let offsetsRemembered = 0;

/**
 * The zone's offset (wall minus UTC, ms) when it is the same at the start,
 * the middle and the end of the UTC day holding `time`, else at both ends
 * of its hour; null when it changes within that hour too (then each minute
 * asks Intl). So a change and its reverse within half a day, or within one
 * hour, would go unseen: in the zone data of 1800-2200 the closest two
 * changes of any zone are 95.7 hours apart (Africa/Freetown, 1939). For a
 * whole-minute instant t, wall = t + offset holds even for old local mean
 * time offsets with seconds: Intl shows the wall minute floored.
 */
function steadyOffset(time: number, timeZone: string): number | null {
  const day = Math.floor(time / DAY_MS) * DAY_MS;
  const atDay = boundaryOffset(day, timeZone);
  // The next day's first minute, shared with it: a change at midnight UTC
  // only sends this day to its hours.
  if (
    atDay === boundaryOffset(day + DAY_MS, timeZone) &&
    atDay === boundaryOffset(day + DAY_MS / 2, timeZone)
  )
    return atDay;
  // Its own last minute: most changes fall on a whole UTC hour, and the
  // hour before one keeps its offset to the end.
  const hour = Math.floor(time / HOUR_MS) * HOUR_MS;
  const atHour = boundaryOffset(hour, timeZone);
  return atHour === boundaryOffset(hour + HOUR_MS - MINUTE_MS, timeZone)
    ? atHour
    : null;
}

function boundaryOffset(time: number, timeZone: string): number {
  let ofZone = boundaryOffsets.get(timeZone);
  if (!ofZone) boundaryOffsets.set(timeZone, (ofZone = new Map()));
  let offset = ofZone.get(time);
  if (offset === undefined) {
    offset =
      wallMinute(intlWallTimeAt(new Date(time), timeZone)) * MINUTE_MS - time;
    if (++offsetsRemembered > OFFSET_MEMO_LIMIT) {
      boundaryOffsets.clear();
      offsetsRemembered = 1;
      boundaryOffsets.set(timeZone, (ofZone = new Map()));
    }
    ofZone.set(time, offset);
  }
  return offset;
}

/** The wall-clock minute as Intl formats it: the reference for every zone. */
export function intlWallTimeAt(instant: Date, timeZone: string): WallTime {
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
export function wallMinute(wall: WallTime): number {
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
