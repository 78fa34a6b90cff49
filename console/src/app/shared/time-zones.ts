/** The viewer's own IANA zone. */
export function viewerZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Every IANA zone the browser knows, for the time zone field's suggestions. */
export function knownZones(): string[] {
  const intl = Intl as typeof Intl & {
    supportedValuesOf?(key: string): string[];
  };
  return intl.supportedValuesOf?.('timeZone') ?? [viewerZone(), 'UTC'];
}

/** `2027-03-01 09:30` style, in `zone` (the viewer's when not given). */
export function formatInZone(iso: string, zone?: string | null): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(undefined, {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: zone ?? undefined,
  }).format(date);
}

/** The zone's offset from UTC, in minutes, at `instant`. */
function offsetMinutes(instant: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant));
  const get = (type: string) =>
    Number(parts.find(part => part.type === type)?.value ?? 0);
  const asUtc = Date.UTC(
    get('year'),
    get('month') - 1,
    get('day'),
    get('hour'),
    get('minute'),
    get('second'),
  );
  return Math.round((asUtc - instant) / 60000);
}

/**
 * A wall-clock `YYYY-MM-DDTHH:mm` (a datetime-local value) read in `zone`,
 * as an ISO 8601 instant with a zone (the API refuses a time without one).
 */
export function wallClockToIso(local: string, zone: string): string | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(local);
  if (!match) return null;
  const [year, month, day, hour, minute] = match.slice(1).map(Number);
  const guess = Date.UTC(year, month - 1, day, hour, minute);
  // Two passes settle the offset also next to a DST change.
  let instant = guess - offsetMinutes(guess, zone) * 60000;
  instant = guess - offsetMinutes(instant, zone) * 60000;
  return new Date(instant).toISOString();
}

/** An instant as the `YYYY-MM-DDTHH:mm` wall clock of `zone`. */
export function isoToWallClock(iso: string, zone: string): string {
  const instant = Date.parse(iso);
  if (Number.isNaN(instant)) return '';
  const shifted = new Date(instant + offsetMinutes(instant, zone) * 60000);
  return shifted.toISOString().slice(0, 16);
}
