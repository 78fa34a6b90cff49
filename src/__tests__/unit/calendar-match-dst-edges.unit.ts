import {expect} from '@loopback/testlab';
import {
  calendarMatches,
  compileCalendar,
  CompiledCalendar,
} from '../../scheduling/calendar-match';
import {CronCache} from '../../scheduling/compiled-cron';

function calendar(
  zone: string,
  dates: string[],
  times: string[],
): CompiledCalendar {
  return compileCalendar(
    {id: 1, name: 'edge', kind: 'blackout', time_zone: zone, dates, times},
    new CronCache(),
  ).calendar;
}

const at = (iso: string) => new Date(iso);

/** Review of issue 26: the calendar's own zone decides, across its DST changes. */
describe('calendar matching at DST edges', () => {
  it('matches both passes of the repeated hour (Europe/London, 25 Oct 2026)', () => {
    const sunday1am = calendar('Europe/London', [], ['* 1 * * 0']);
    // 00:30 UTC is 01:30 BST, 01:30 UTC is 01:30 GMT: both are "01:30".
    expect(calendarMatches(sunday1am, at('2026-10-25T00:30:00Z'))).to.be.true();
    expect(calendarMatches(sunday1am, at('2026-10-25T01:30:00Z'))).to.be.true();
    expect(
      calendarMatches(sunday1am, at('2026-10-25T02:30:00Z')),
    ).to.be.false();
  });

  it('never matches the skipped hour (Europe/London, 29 Mar 2026)', () => {
    const sunday1am = calendar('Europe/London', [], ['* 1 * * 0']);
    // 01:00–01:59 local does not exist on 29 March: 00:30 UTC is 00:30 GMT,
    // 01:30 UTC is 02:30 BST.
    expect(
      calendarMatches(sunday1am, at('2026-03-29T00:30:00Z')),
    ).to.be.false();
    expect(
      calendarMatches(sunday1am, at('2026-03-29T01:30:00Z')),
    ).to.be.false();
  });

  it('reads a blackout date in its own zone, not the scheduler’s (Pacific/Auckland vs UTC)', () => {
    const christmas = calendar('Pacific/Auckland', ['2026-12-25'], []);
    // 11:00 UTC on the 24th is already 00:00 on the 25th in Auckland (NZDT +13).
    expect(
      calendarMatches(christmas, at('2026-12-24T10:59:00Z')),
    ).to.be.false();
    expect(calendarMatches(christmas, at('2026-12-24T11:00:00Z'))).to.be.true();
    expect(calendarMatches(christmas, at('2026-12-25T10:59:00Z'))).to.be.true();
    expect(
      calendarMatches(christmas, at('2026-12-25T11:00:00Z')),
    ).to.be.false();
  });

  it('covers a whole 23-hour day on the spring-forward date in the calendar zone', () => {
    const changeDay = calendar('America/New_York', ['2026-03-08'], []);
    // 8 March 2026 in New York: 05:00 UTC (EST) to 04:00 UTC next day (EDT).
    expect(
      calendarMatches(changeDay, at('2026-03-08T04:59:00Z')),
    ).to.be.false();
    expect(calendarMatches(changeDay, at('2026-03-08T05:00:00Z'))).to.be.true();
    expect(calendarMatches(changeDay, at('2026-03-09T03:59:00Z'))).to.be.true();
    expect(
      calendarMatches(changeDay, at('2026-03-09T04:00:00Z')),
    ).to.be.false();
  });
});
