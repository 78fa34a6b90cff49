import {expect} from '@loopback/testlab';
import {TURN_MS, TurnSharer} from '../../process/turn-sharer';
import {
  calendarMatches,
  calendarVerdict,
  compileCalendar,
} from '../../scheduling/calendar-match';
import {compileCron, CronCache} from '../../scheduling/compiled-cron';
import {plannedFires} from '../../scheduling/planned-fires';
import {slotVerdicts} from '../../scheduling/slot-verdicts';

const NOW = new Date('2026-11-21T10:00:00Z');

/** A clock that moves `step` ms each time it is read. */
function steppingClock(step: number) {
  let now = 0;
  const clock = () => (now += step);
  clock.peek = () => now;
  return clock;
}

/**
 * Queues a macrotask (as a request's I/O would be) and reports the clock's
 * value when it ran: undefined while it has not.
 */
function otherWork(clock: {peek: () => number}) {
  const seen: {at?: number} = {};
  setImmediate(() => (seen.at = clock.peek()));
  return seen;
}

const calendar = (id: number, kind: string, dates: string[]) =>
  compileCalendar(
    {id, name: `cal ${id}`, kind, time_zone: 'UTC', dates, times: []},
    new CronCache(),
  ).calendar;

describe('long work shares the event loop (TurnSharer)', () => {
  it('is due after TURN_MS of its clock, and a pass lets queued work run and starts a new turn', async () => {
    const clock = steppingClock(1);
    const turns = new TurnSharer(clock);
    for (let i = 1; i < TURN_MS; i++) expect(turns.due()).to.be.false();
    expect(turns.due()).to.be.true();
    const seen = otherWork(clock);
    await turns.pass();
    expect(seen.at).not.to.be.undefined();
    expect(turns.due()).to.be.false();
  });

  it('lets other work run during a look ahead through calendars, and finishes it afterwards', async () => {
    const clock = steppingClock(1);
    const seen = otherWork(clock);
    const plan = await plannedFires(compileCron('* * * * *'), 'UTC', NOW, 50, {
      calendars: [calendar(1, 'blackout', ['2001-01-01'])],
      clock,
      timeBudgetMs: 1e9,
    });
    expect(plan.runs).to.have.length(50);
    // The queued work ran while the look ahead was under way, not after it.
    expect(seen.at).to.be.lessThan(clock.peek());
  });

  it('does not pass the event loop on a look ahead without calendars (it never reads the clock)', async () => {
    const clock = steppingClock(1000);
    const seen = otherWork(clock);
    const plan = await plannedFires(
      compileCron('* * * * *'),
      'UTC',
      NOW,
      5000,
      {calendars: [], clock},
    );
    expect(plan.runs).to.have.length(5000);
    expect(seen.at).to.be.undefined();
  });

  it("judges a backfill's slots as calendarVerdict does, passing the event loop between them", async () => {
    const calendars = [
      calendar(1, 'blackout', ['2026-11-22']),
      calendar(2, 'allowed', ['2026-11-21', '2026-11-22', '2026-11-24']),
    ];
    const slots = Array.from(
      {length: 5},
      (_, i) => new Date(NOW.getTime() + i * 86_400_000),
    );
    const clock = steppingClock(TURN_MS);
    const seen = otherWork(clock);
    const verdicts = await slotVerdicts(
      calendars,
      slots,
      new TurnSharer(clock),
    );
    expect(verdicts).to.deepEqual(
      slots.map(slot =>
        calendarVerdict(calendars, c => calendarMatches(c, slot)),
      ),
    );
    expect(verdicts.map(v => v?.calendarId ?? null)).to.deepEqual([
      null,
      1,
      2,
      null,
      2,
    ]);
    expect(seen.at).to.be.lessThan(clock.peek());
  });

  it('does not pass the event loop for slots no calendar judges', async () => {
    const clock = steppingClock(TURN_MS);
    const seen = otherWork(clock);
    const verdicts = await slotVerdicts([], [NOW, NOW], new TurnSharer(clock));
    expect(verdicts).to.deepEqual([undefined, undefined]);
    expect(seen.at).to.be.undefined();
  });
});
