import {TurnSharer} from '../process/turn-sharer';
import {
  calendarMatches,
  calendarVerdict,
  CalendarSkip,
  CompiledCalendar,
} from './calendar-match';

/**
 * The calendars' verdict on each slot (undefined: it runs), in order. A
 * backfill judges up to 1,000 slots by up to 100 calendars, each perhaps in
 * a zone of its own: seconds of work that must all be done, so it gives the
 * event loop back every turn instead of holding the API for all of it.
 */
export async function slotVerdicts(
  calendars: readonly CompiledCalendar[],
  slots: readonly Date[],
  turns: TurnSharer = new TurnSharer(),
): Promise<Array<CalendarSkip | undefined>> {
  const verdicts: Array<CalendarSkip | undefined> = [];
  for (const slot of slots) {
    verdicts.push(
      calendarVerdict(calendars, calendar => calendarMatches(calendar, slot)),
    );
    if (calendars.length > 0 && turns.due()) await turns.pass();
  }
  return verdicts;
}
