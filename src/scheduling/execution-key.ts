const pad = (value: number) => String(value).padStart(2, '0');

/**
 * `cron-<year>-<month>-<day>-<hour>-<minute>` of the slot in UTC, zero-padded
 * (`cron-2026-03-29-01-05`). UTC, not wall time, so the two passes of a
 * repeated DST hour can never share a key.
 */
export function executionKey(slot: Date): string {
  return [
    'cron',
    slot.getUTCFullYear(),
    pad(slot.getUTCMonth() + 1),
    pad(slot.getUTCDate()),
    pad(slot.getUTCHours()),
    pad(slot.getUTCMinutes()),
  ].join('-');
}
