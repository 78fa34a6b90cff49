import {expect} from '@loopback/testlab';
import {compileCalendar} from '../../scheduling/calendar-match';
import {compileCron, CronCache} from '../../scheduling/compiled-cron';
import {nextRun} from '../../scheduling/next-run';
import {
  firesWithinBudget,
  LOOK_AHEAD_CALENDAR_CHECKS,
  plannedFires,
} from '../../scheduling/planned-fires';

const NOW = new Date('2026-11-21T10:00:00Z');

/** `count` allowed calendars that never match (one day of 2001), ids 1..count. */
function neverMatching(count: number) {
  const cache = new CronCache();
  return Array.from(
    {length: count},
    (_, i) =>
      compileCalendar(
        {
          id: i + 1,
          name: `cal ${i + 1}`,
          kind: 'allowed',
          time_zone: 'UTC',
          dates: ['2001-01-01'],
          times: [],
        },
        cache,
      ).calendar,
  );
}

/** An active every-minute scheduler naming `calendars`. */
const everyMinute = (calendars: Array<{id: number}>) => ({
  schedule: '* * * * *',
  date_time: null,
  status: true,
  stay_alive: false,
  starts_at: null,
  ends_at: null,
  calendar_ids: calendars.map(calendar => calendar.id),
});

describe('the look ahead is bounded by its calendar checks, not only by fires', () => {
  it('keeps 5,000 fires up to 50 calendars and looks at fewer beyond', async () => {
    expect(LOOK_AHEAD_CALENDAR_CHECKS).to.equal(250_000);
    expect(firesWithinBudget(5000, 0)).to.equal(5000);
    expect(firesWithinBudget(5000, 50)).to.equal(5000);
    expect(firesWithinBudget(5000, 51)).to.equal(4901);
    expect(firesWithinBudget(1000, 100)).to.equal(1000);
    expect(firesWithinBudget(5000, 1000)).to.equal(250);
    // However many calendars: at least the next fire is looked at.
    expect(firesWithinBudget(5000, 1_000_000)).to.equal(1);
  });

  it('stops a preview of 1,000 never-matching calendars after 250 fires, and says so', async () => {
    const calendars = neverMatching(1000);
    const plan = await plannedFires(compileCron('* * * * *'), 'UTC', NOW, 10, {
      calendars,
    });
    expect(plan.runs).to.be.empty();
    expect(plan.skipped).to.have.length(250);
    expect(plan).to.containDeep({stoppedBy: 'fires', considered: 250});
    const none = await nextRun(everyMinute(calendars), NOW, {
      timeZone: 'UTC',
      catchUpMinutes: 5,
      calendars: new Map(calendars.map(c => [c.id, c])),
    });
    expect(none.problem).to.match(
      /^no run among the next 250 fires: calendars skip them all/,
    );
  });

  it('stops when its time is up, and answers what it found among the fires it looked at', async () => {
    let now = 0;
    // Each reading of the clock is a millisecond later: ten fires, then stop.
    const clock = () => now++;
    const plan = await plannedFires(compileCron('* * * * *'), 'UTC', NOW, 10, {
      calendars: neverMatching(2),
      timeBudgetMs: 10,
      clock,
    });
    expect(plan.runs).to.be.empty();
    expect(plan.skipped.length).to.be.within(9, 11);
    expect(plan.skipped[0].at).to.eql(new Date('2026-11-21T10:01:00Z'));
    expect(plan.stoppedBy).to.equal('time');
  });

  it('says in the problem of the next run that its time ran out, and that later runs may exist', async () => {
    let now = 0;
    const calendars = neverMatching(2);
    const none = await nextRun(everyMinute(calendars), NOW, {
      timeZone: 'UTC',
      catchUpMinutes: 5,
      calendars: new Map(calendars.map(c => [c.id, c])),
      // 100 ms a reading: past the second's budget after about ten fires.
      clock: () => (now += 100),
    });
    expect(none.at).to.be.null();
    expect(none.problem).to.match(
      /^no run among the \d+ fires looked at before the look ahead stopped because its time ran out \(1000 ms\); later runs may exist: calendars skip them all/,
    );
  });

  it('leaves stoppedBy unset when it looked at everything there was', async () => {
    const plan = await plannedFires(compileCron('0 3 1 1 *'), 'UTC', NOW, 10, {
      calendars: [],
    });
    // Five years hold five fires of a yearly schedule: fewer than asked, all seen.
    expect(plan.runs).to.have.length(5);
    expect(plan.stoppedBy).to.be.undefined();
  });

  it('reads the clock once only for a schedule without calendars: its answer does not depend on the machine', async () => {
    let readings = 0;
    const plan = await plannedFires(compileCron('0 3 * * *'), 'UTC', NOW, 100, {
      calendars: [],
      timeBudgetMs: 0,
      clock: () => ++readings * 1000,
    });
    expect(plan.runs).to.have.length(100);
    expect(readings).to.be.below(2);
  });

  it('names three allowed calendars in a skip reason and counts the rest', async () => {
    const cron = compileCron('* * * * *');
    const many = await plannedFires(cron, 'UTC', NOW, 1, {
      calendars: neverMatching(1000),
      maxConsidered: 1,
    });
    expect(many.skipped[0].reason).to.equal(
      'calendar "cal 1" (id 1), "cal 2" (id 2), "cal 3" (id 3) and 997 more: no allowed calendar matches this slot',
    );
    const three = await plannedFires(cron, 'UTC', NOW, 1, {
      calendars: neverMatching(3),
      maxConsidered: 1,
    });
    expect(three.skipped[0].reason).to.equal(
      'calendar "cal 1" (id 1), "cal 2" (id 2), "cal 3" (id 3): no allowed calendar matches this slot',
    );
  });
});
