import {expect} from '@loopback/testlab';
import {NotICalendarError} from '../../calendars/ical-dates';
import {
  importAllDayDatesIsolated,
  ImportTooSlowError,
} from '../../calendars/ical-import-isolated';

const NOW = new Date('2026-11-25T00:00:00Z');

function oneEvent(lines: string[]): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//review//hostile//EN',
    'BEGIN:VEVENT',
    'UID:hostile@example.org',
    ...lines,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}

async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return await promise;
  } catch (error) {
    return error;
  }
}

describe('iCalendar import in a worker', () => {
  // ical.js never returns from next() for a daily rule no day satisfies:
  // on the main thread this 200-byte body hung the whole service.
  it('refuses a rule ical.js never finishes instead of hanging the process', async () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:00010101',
      'RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
    ]);
    const result = await outcome(
      importAllDayDatesIsolated(text, NOW, 20_000, 300),
    );
    expect(result).to.be.instanceOf(ImportTooSlowError);
  });

  it('gives the dates of a readable file', async () => {
    const text = oneEvent(['DTSTART;VALUE=DATE:20201225', 'RRULE:FREQ=YEARLY']);
    const result = await importAllDayDatesIsolated(text, NOW, 20_000);
    expect(result.dates).to.deepEqual([
      '2026-12-25',
      '2027-12-25',
      '2028-12-25',
      '2029-12-25',
      '2030-12-25',
    ]);
  });

  it('passes the parser refusal back as its own class', async () => {
    const result = await outcome(
      importAllDayDatesIsolated('hello', NOW, 20_000),
    );
    expect(result).to.be.instanceOf(NotICalendarError);
  });
});
