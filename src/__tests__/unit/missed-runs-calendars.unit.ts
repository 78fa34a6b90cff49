import {expect} from '@loopback/testlab';
import {countDuePerScheduler} from '../../producer/due-evaluator';
import type {Candidate} from '../../producer/candidate';
import {compileCalendar, SlotCalendars} from '../../scheduling/calendar-match';
import {CronCache} from '../../scheduling/compiled-cron';

const HOUR = 60 * 60_000;

/**
 * Review of issue 26: the missed-runs notice counted the fires a calendar
 * would have skipped anyway, so an outage over a blackout day (or a weekend
 * outside a trading-days calendar) told the owner of runs that were never due.
 */
describe('missed runs: counted with the calendars', () => {
  const cache = new CronCache();
  const christmas = compileCalendar(
    {
      id: 7,
      name: 'UK bank holidays',
      kind: 'blackout',
      time_zone: 'Europe/London',
      dates: ['2026-12-25'],
      times: [],
    },
    cache,
  ).calendar;
  const hourly = (id: number, calendarIds: number[]): Candidate => ({
    id,
    schedule: '0 * * * *',
    date_time: null,
    timezone: 'Europe/London',
    activated_at: new Date('2000-01-01T00:00:00Z'),
    calendar_ids: calendarIds,
  });
  // An outage from 22:00 on the 24th to 01:00 on the 26th, whole hours.
  const first = new Date('2026-12-24T22:00:00Z').getTime();
  const slots = Array.from({length: 28}, (_, i) => new Date(first + i * HOUR));

  it('leaves out the fires a blackout calendar skips', () => {
    const calendars = new SlotCalendars(new Map([[7, christmas]]), slots);
    const counts = countDuePerScheduler(
      [hourly(1, [7]), hourly(2, [])],
      slots,
      'UTC',
      cache,
      calendars,
    );
    // 22:00, 23:00 on the 24th and 00:00, 01:00 on the 26th.
    expect(counts.get(1)).to.equal(4);
    expect(counts.get(2)).to.equal(28);
  });

  it('gives no count at all when the calendar skips every missed fire', () => {
    const christmasOnly = slots.slice(2, 26);
    const calendars = new SlotCalendars(
      new Map([[7, christmas]]),
      christmasOnly,
    );
    const counts = countDuePerScheduler(
      [hourly(1, [7])],
      christmasOnly,
      'UTC',
      cache,
      calendars,
    );
    expect(counts.has(1)).to.be.false();
  });
});
