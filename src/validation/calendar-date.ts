/**
 * A day of the calendar written YYYY-MM-DD (year 1 to 9999), and one that
 * exists: 2026-02-30 is not one. Kept in a module of its own, with no
 * imports: the iCalendar import's worker thread loads it, and each module
 * more is start-up time that worker spends before it can parse anything.
 */
export function isCalendarDate(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number);
  // setUTCFullYear: Date.UTC reads years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return (
    year >= 1 &&
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day
  );
}
