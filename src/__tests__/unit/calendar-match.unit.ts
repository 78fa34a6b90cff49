import {expect} from '@loopback/testlab';
import {CronCache} from '../../scheduling/compiled-cron';
import {
  CalendarSpec,
  calendarMatches,
  calendarVerdict,
  compileCalendar,
  CompiledCalendar,
  SlotCalendars,
} from '../../scheduling/calendar-match';

const cache = new CronCache();

function givenCalendar(
  overrides: Partial<CalendarSpec> = {},
): CompiledCalendar {
  return compileCalendar(
    {
      id: 1,
      name: 'UK bank holidays',
      kind: 'blackout',
      time_zone: 'Europe/London',
      dates: [],
      times: [],
      ...overrides,
    },
    cache,
  ).calendar;
}

const at = (iso: string) => new Date(iso);

describe('calendar matching (pure, in the calendar zone)', () => {
  it('matches every minute of a listed date in its own zone, and none of the days around it', () => {
    const christmas = givenCalendar({dates: ['2026-12-25']});
    expect(calendarMatches(christmas, at('2026-12-25T00:00:00Z'))).to.be.true();
    expect(calendarMatches(christmas, at('2026-12-25T23:59:00Z'))).to.be.true();
    expect(
      calendarMatches(christmas, at('2026-12-24T23:59:00Z')),
    ).to.be.false();
    expect(
      calendarMatches(christmas, at('2026-12-26T00:00:00Z')),
    ).to.be.false();
  });

  it('reads dates in the calendar zone, not UTC: Tokyo Christmas starts at 15:00 UTC the day before', () => {
    const tokyo = givenCalendar({
      time_zone: 'Asia/Tokyo',
      dates: ['2026-12-25'],
    });
    expect(calendarMatches(tokyo, at('2026-12-24T15:00:00Z'))).to.be.true();
    expect(calendarMatches(tokyo, at('2026-12-24T14:59:00Z'))).to.be.false();
    expect(calendarMatches(tokyo, at('2026-12-25T15:00:00Z'))).to.be.false();
  });

  it('follows the calendar zone across a DST change: the London day of 2027-03-28 starts at 00:00 UTC and ends at 22:59 UTC', () => {
    const clocksChange = givenCalendar({dates: ['2027-03-28']});
    expect(
      calendarMatches(clocksChange, at('2027-03-28T00:00:00Z')),
    ).to.be.true();
    expect(
      calendarMatches(clocksChange, at('2027-03-28T22:59:00Z')),
    ).to.be.true();
    // 23:00 UTC is already 00:00 BST on the 29th.
    expect(
      calendarMatches(clocksChange, at('2027-03-28T23:00:00Z')),
    ).to.be.false();
  });

  it('matches the minutes of a times expression: "* 2-3 * * 0" is Sunday 02:00 to 03:59 on the calendar wall clock', () => {
    const maintenance = givenCalendar({
      time_zone: 'UTC',
      times: ['* 2-3 * * 0'],
    });
    // 2026-11-29 is a Sunday.
    expect(
      calendarMatches(maintenance, at('2026-11-29T01:59:00Z')),
    ).to.be.false();
    expect(
      calendarMatches(maintenance, at('2026-11-29T02:00:00Z')),
    ).to.be.true();
    expect(
      calendarMatches(maintenance, at('2026-11-29T03:59:00Z')),
    ).to.be.true();
    expect(
      calendarMatches(maintenance, at('2026-11-29T04:00:00Z')),
    ).to.be.false();
    expect(
      calendarMatches(maintenance, at('2026-11-30T02:30:00Z')),
    ).to.be.false();
  });

  it('lets blackout win over allowed, names the deciding calendar, and skips when no allowed calendar matches', () => {
    const blackout = givenCalendar({
      id: 1,
      name: 'Holidays',
      dates: ['2026-12-25'],
    });
    const trading = givenCalendar({
      id: 2,
      name: 'Trading days',
      kind: 'allowed',
      time_zone: 'UTC',
      times: ['* * * * 1-5'],
    });
    const both = [blackout, trading];
    const verdictAt = (iso: string) =>
      calendarVerdict(both, calendar => calendarMatches(calendar, at(iso)));
    // Friday 25 December: trading allows it, the blackout wins.
    expect(verdictAt('2026-12-25T06:00:00Z')).to.containDeep({
      calendarId: 1,
      calendarName: 'Holidays',
    });
    expect(verdictAt('2026-12-25T06:00:00Z')!.reason).to.match(
      /"Holidays" \(id 1\).*blackout/,
    );
    // Saturday: no allowed calendar matches.
    expect(verdictAt('2026-12-26T06:00:00Z')).to.containDeep({calendarId: 2});
    expect(verdictAt('2026-12-26T06:00:00Z')!.reason).to.match(
      /"Trading days" \(id 2\).*no allowed/,
    );
    // Thursday 24th: fires.
    expect(verdictAt('2026-12-24T06:00:00Z')).to.be.undefined();
    // No calendars: never skipped.
    expect(calendarVerdict([], () => true)).to.be.undefined();
  });

  it('answers per tick from one computation per calendar and slot, ignoring ids it does not know', () => {
    const holidays = givenCalendar({id: 7, dates: ['2026-12-25']});
    const slots = [at('2026-12-24T06:00:00Z'), at('2026-12-25T06:00:00Z')];
    const book = new SlotCalendars(new Map([[7, holidays]]), slots);
    expect(book.skipAt([7], 0)).to.be.undefined();
    expect(book.skipAt([7], 1)).to.containDeep({calendarId: 7});
    expect(book.skipAt([99], 1)).to.be.undefined();
    expect(book.skipAt([99, 7], 1)).to.containDeep({calendarId: 7});
    expect(book.skipAt([], 1)).to.be.undefined();
  });
});
