import {expect} from '@loopback/testlab';
import {TURN_MS, TurnSharer} from '../../process/turn-sharer';
import {
  calendarMatches,
  calendarVerdict,
  compileCalendar,
} from '../../scheduling/calendar-match';
import {compileCron, CronCache} from '../../scheduling/compiled-cron';
import {nextRun} from '../../scheduling/next-run';
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

/**
 * A clock read by the work (a millisecond a reading) while other work keeps
 * the event loop busy, 500 ms a turn, until `stop()`.
 */
function busyEventLoop() {
  let now = 0;
  let stopped = false;
  const others = () => {
    now += 500;
    if (!stopped) setImmediate(others);
  };
  setImmediate(others);
  return {
    clock: () => ++now,
    elapsed: () => now,
    stop: () => (stopped = true),
  };
}

/** An active scheduler of `schedule` naming calendar 1. */
const namingCalendarOne = (schedule: string) => ({
  schedule,
  date_time: null,
  status: true,
  stay_alive: false,
  starts_at: null,
  ends_at: null,
  calendar_ids: [1],
});

const calendar = (
  id: number,
  kind: string,
  dates: string[],
  times: string[] = [],
) =>
  compileCalendar(
    {id, name: `cal ${id}`, kind, time_zone: 'UTC', dates, times},
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

  it('does not pass the event loop on a look ahead without calendars (it reads the clock only at its start)', async () => {
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

  it('counts its own turns against its time, not the work the event loop ran between them (review: a busy API cut answers short)', async () => {
    const busy = busyEventLoop();
    const plan = await plannedFires(compileCron('* * * * *'), 'UTC', NOW, 10, {
      calendars: [calendar(1, 'allowed', ['2001-01-01'])],
      maxConsidered: 300,
      clock: busy.clock,
      wallBudgetMs: 1e9,
    });
    busy.stop();
    // About 300 ms of its own work, and far more than its 1,000 ms in all.
    expect(busy.elapsed()).to.be.greaterThan(5000);
    expect(plan.considered).to.equal(300);
    expect(plan.stoppedBy).to.equal('fires');
  });

  it('stops at its time in all when the others take it (wall), and says why', async () => {
    const busy = busyEventLoop();
    const next = await nextRun(namingCalendarOne('* * * * *'), NOW, {
      timeZone: 'UTC',
      catchUpMinutes: 5,
      calendars: new Map([[1, calendar(1, 'allowed', ['2001-01-01'])]]),
      clock: busy.clock,
    });
    busy.stop();
    expect(next.at).to.be.null();
    expect(next.problem).to.match(
      /^no run among the \d+ fires looked at before the look ahead stopped because the process was busy and 5000 ms passed; later runs may exist/,
    );
  });

  it("shares one sharer across a report's short look aheads, so they too give the event loop back", async () => {
    const clock = steppingClock(1);
    const seen = otherWork(clock);
    // Skips 11:00, 12:00 and 13:00: each look ahead reads the clock a few
    // times, far below a turn, and finds 14:00.
    const calendars = new Map([
      [1, calendar(1, 'blackout', [], ['* 11-13 * * *'])],
    ]);
    const context = {
      timeZone: 'UTC',
      catchUpMinutes: 5,
      calendars,
      clock,
      turns: new TurnSharer(clock),
    };
    const row = namingCalendarOne('0 * * * *');
    // 20 of them together take more than a turn.
    for (let i = 0; i < 20; i++) {
      expect((await nextRun(row, NOW, context)).at).to.eql(
        new Date('2026-11-21T14:00:00Z'),
      );
    }
    expect(seen.at).to.be.lessThan(clock.peek());
    // Without the shared sharer, none of them would have passed.
    const alone = otherWork(clock);
    for (let i = 0; i < 20; i++) {
      await nextRun(row, NOW, {...context, turns: undefined});
    }
    expect(alone.at).to.be.undefined();
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

  it("ends its work at the next pass once its stop signal aborts, with the signal's reason", async () => {
    const stop = new AbortController();
    const turns = new TurnSharer(steppingClock(1), TURN_MS, stop.signal);
    await turns.pass();
    const gone = new Error('gone');
    stop.abort(gone);
    await expect(turns.pass()).to.be.rejectedWith(gone);
  });

  it('stops a look ahead through calendars when its signal aborts midway', async () => {
    const clock = steppingClock(1);
    const stop = new AbortController();
    // Aborted by other work queued meanwhile, as a client's 'close' would be.
    setImmediate(() => stop.abort(new Error('client gone')));
    await expect(
      plannedFires(compileCron('* * * * *'), 'UTC', NOW, 50_000, {
        calendars: [calendar(1, 'blackout', ['2001-01-01'])],
        clock,
        timeBudgetMs: 1e9,
        wallBudgetMs: 1e9,
        signal: stop.signal,
      }),
    ).to.be.rejectedWith('client gone');
    // Stopped within a few turns, far from the 50,000 fires it was asked for.
    expect(clock.peek()).to.be.below(50 * TURN_MS);
  });

  it("stops slot verdicts when its sharer's signal aborts midway", async () => {
    const stop = new AbortController();
    setImmediate(() => stop.abort(new Error('client gone')));
    const slots = Array.from({length: 10_000}, () => NOW);
    await expect(
      slotVerdicts(
        [calendar(1, 'blackout', ['2001-01-01'])],
        slots,
        new TurnSharer(steppingClock(1), TURN_MS, stop.signal),
      ),
    ).to.be.rejectedWith('client gone');
  });
});
