import {expect} from '@loopback/testlab';
import {readFileSync} from 'node:fs';
import path from 'node:path';
import {
  importAllDayDates,
  NotICalendarError,
  TooManyDatesError,
} from '../../calendars/ical-dates';

/** The shipped fixture (tsc does not copy it into dist: read from src). */
export const HOLIDAYS_ICS = readFileSync(
  path.resolve(
    __dirname,
    '../../../src/__tests__/fixtures/calendars/holidays.ics',
  ),
  'utf8',
);

describe('iCalendar import (ical.js)', () => {
  it('expands a yearly RRULE holiday for five years from the injected day, adds a two-day event whole, and leaves timed events out', () => {
    const result = importAllDayDates(
      HOLIDAYS_ICS,
      new Date('2026-11-24T12:00:00Z'),
      1000,
    );
    expect(result.dates).to.deepEqual([
      '2026-12-25',
      '2027-03-15',
      '2027-03-16',
      '2027-12-25',
      '2028-12-25',
      '2029-12-25',
      '2030-12-25',
    ]);
    expect(result.timed_events_ignored).to.equal(1);
  });

  it('starts the expansion at the injected time, not at the first occurrence', () => {
    const later = importAllDayDates(
      HOLIDAYS_ICS,
      new Date('2030-01-10T00:00:00Z'),
      1000,
    );
    expect(later.dates.filter(d => d.endsWith('12-25'))).to.deepEqual([
      '2030-12-25',
      '2031-12-25',
      '2032-12-25',
      '2033-12-25',
      '2034-12-25',
    ]);
  });

  for (const notICalendar of [
    'hello',
    '{"dates": ["2026-12-25"]}',
    'BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Someone\r\nEND:VCARD\r\n',
    'BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\n',
  ]) {
    it(`refuses ${JSON.stringify(notICalendar.slice(0, 20))} as not iCalendar`, () => {
      expect(() => importAllDayDates(notICalendar, new Date(), 1000)).to.throw(
        NotICalendarError,
      );
    });
  }

  it('refuses a file whose expansion gives more days than a calendar holds', () => {
    const daily = HOLIDAYS_ICS.replace('RRULE:FREQ=YEARLY', 'RRULE:FREQ=DAILY');
    expect(() =>
      importAllDayDates(daily, new Date('2026-11-24T00:00:00Z'), 100),
    ).to.throw(TooManyDatesError);
  });
});
