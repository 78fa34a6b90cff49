import {expect} from '@loopback/testlab';
import {
  compileCalendar,
  CompiledCalendar,
} from '../../scheduling/calendar-match';
import {CronCache} from '../../scheduling/compiled-cron';
import {nextRun, NextRunContext} from '../../scheduling/next-run';

const NOW = new Date('2026-11-21T10:00:00Z');
const recurring = (schedule: string) => ({
  schedule,
  date_time: null as Date | null,
  status: true,
  stay_alive: false,
  starts_at: null as Date | null,
  ends_at: null as Date | null,
  calendar_ids: null as number[] | null,
});
const oneTime = (at: Date) => ({
  ...recurring(''),
  schedule: null,
  date_time: at,
});
const inZone = (timeZone: string): NextRunContext => ({
  timeZone,
  catchUpMinutes: 5,
});
const UTC = inZone('UTC');

function calendars(
  ...specs: Array<{id: number; kind: string; dates: string[]}>
): Map<number, CompiledCalendar> {
  const cache = new CronCache();
  return new Map(
    specs.map(spec => [
      spec.id,
      compileCalendar(
        {...spec, name: `cal ${spec.id}`, time_zone: 'UTC', times: []},
        cache,
      ).calendar,
    ]),
  );
}

describe('next run of a scheduler', () => {
  it('finds the next cron match after now, in the given time zone', async () => {
    expect((await nextRun(recurring('0 2 * * *'), NOW, UTC)).at).to.eql(
      new Date('2026-11-22T02:00:00Z'),
    );
    expect(
      (await nextRun(recurring('0 2 * * *'), NOW, inZone('Europe/Berlin'))).at,
    ).to.eql(new Date('2026-11-22T01:00:00Z'));
    expect((await nextRun(recurring('*/15 * * * *'), NOW, UTC)).at).to.eql(
      new Date('2026-11-21T10:15:00Z'),
    );
  });

  it('crosses month and year boundaries', async () => {
    expect(
      (
        await nextRun(
          recurring('30 0 1 * *'),
          new Date('2026-12-31T23:00:00Z'),
          UTC,
        )
      ).at,
    ).to.eql(new Date('2027-01-01T00:30:00Z'));
  });

  it('fires as the producer does across a spring-forward gap: the skipped 02:30 runs at 03:00', async () => {
    // 2027-03-28 in Berlin has no 02:00-02:59; the producer fires the run
    // the gap skipped in the first minute after it (01:00 UTC, 03:00 CEST).
    expect(
      (
        await nextRun(
          recurring('30 2 * * *'),
          new Date('2027-03-27T12:00:00Z'),
          inZone('Europe/Berlin'),
        )
      ).at,
    ).to.eql(new Date('2027-03-28T01:00:00Z'));
  });

  it('gives a one-time scheduler its date while it lies ahead', async () => {
    const at = new Date('2026-11-22T08:00:00Z');
    expect(await nextRun(oneTime(at), NOW, UTC)).to.eql({at});
    expect(await nextRun(oneTime(new Date(0)), NOW, UTC)).to.eql({
      at: null,
      problem: 'one-time run is past',
    });
  });

  it('judges a one-time run in the current minute by the catch-up window, as the API accepts it', async () => {
    const at = new Date('2026-11-21T10:00:10Z');
    const now = new Date('2026-11-21T10:00:30Z');
    expect(await nextRun(oneTime(at), now, UTC)).to.eql({at});
    expect(
      await nextRun(oneTime(at), now, {timeZone: 'UTC', catchUpMinutes: 0}),
    ).to.eql({at: null, problem: 'one-time run is past'});
  });

  it('starts a recurring schedule no earlier than starts_at', async () => {
    const scheduler = {
      ...recurring('0 * * * *'),
      starts_at: new Date('2026-12-01T00:30:00Z'),
    };
    expect((await nextRun(scheduler, NOW, UTC)).at).to.eql(
      new Date('2026-12-01T01:00:00Z'),
    );
  });

  it('gives none once ends_at has passed, or when the next fire lies after it', async () => {
    const ended = {
      ...recurring('* * * * *'),
      ends_at: new Date('2026-11-20T00:00:00Z'),
    };
    expect(await nextRun(ended, NOW, UTC)).to.eql({
      at: null,
      problem: 'active window ended at 2026-11-20T00:00:00.000Z',
    });
    const endsBeforeNextFire = {
      ...recurring('0 2 * * *'),
      ends_at: new Date('2026-11-21T23:00:00Z'),
    };
    expect(await nextRun(endsBeforeNextFire, NOW, UTC)).to.eql({
      at: null,
      problem:
        'no fire before its active window ends at 2026-11-21T23:00:00.000Z',
    });
  });

  it('keeps a one-time run outside its active window off the list', async () => {
    const at = new Date('2026-11-22T08:00:00Z');
    expect(
      await nextRun(
        {...oneTime(at), ends_at: new Date('2026-11-22T07:00:00Z')},
        NOW,
        UTC,
      ),
    ).to.eql({at: null, problem: 'outside its active window'});
    expect(
      await nextRun(
        {...oneTime(at), starts_at: new Date('2026-11-22T09:00:00Z')},
        NOW,
        UTC,
      ),
    ).to.eql({at: null, problem: 'outside its active window'});
  });

  it('passes over fires a calendar skips, and says when a calendar skips the one run', async () => {
    const context: NextRunContext = {
      ...UTC,
      calendars: calendars({id: 7, kind: 'blackout', dates: ['2026-11-22']}),
    };
    expect(
      (
        await nextRun(
          {...recurring('0 2 * * *'), calendar_ids: [7]},
          NOW,
          context,
        )
      ).at,
    ).to.eql(new Date('2026-11-23T02:00:00Z'));
    const skipped = await nextRun(
      {...oneTime(new Date('2026-11-22T08:00:00Z')), calendar_ids: [7]},
      NOW,
      context,
    );
    expect(skipped.at).to.be.null();
    expect(skipped.problem).to.match(/^skipped: calendar "cal 7" \(id 7\)/);
  });

  it('ignores calendar ids that name no calendar, as the producer does', async () => {
    expect(
      (
        await nextRun({...recurring('0 2 * * *'), calendar_ids: [99]}, NOW, {
          ...UTC,
          calendars: new Map(),
        })
      ).at,
    ).to.eql(new Date('2026-11-22T02:00:00Z'));
  });

  it('says so when every fire it looked at is skipped', async () => {
    const context: NextRunContext = {
      ...UTC,
      calendars: calendars({id: 3, kind: 'allowed', dates: ['2020-01-01']}),
    };
    const none = await nextRun(
      {...recurring('* * * * *'), calendar_ids: [3]},
      NOW,
      context,
    );
    expect(none.at).to.be.null();
    expect(none.problem).to.match(
      /^no run among the next 5000 fires: calendars skip them all \(the first: calendar "cal 3" \(id 3\): no allowed calendar matches/,
    );
    const fewer = await nextRun(
      {...recurring('* * * * *'), calendar_ids: [3]},
      NOW,
      {
        ...context,
        maxConsidered: 1000,
      },
    );
    expect(fewer.problem).to.match(/^no run among the next 1000 fires/);
  });

  it('finds a run past thousands of skipped fires, asking for more slots each time', async () => {
    const context: NextRunContext = {
      ...UTC,
      calendars: calendars({
        id: 5,
        kind: 'blackout',
        dates: ['2026-11-21', '2026-11-22'],
      }),
    };
    expect(
      (
        await nextRun(
          {...recurring('* * * * *'), calendar_ids: [5]},
          NOW,
          context,
        )
      ).at,
    ).to.eql(new Date('2026-11-23T00:00:00Z'));
  });

  it("reads the database's infinity as no bound, and an infinite date_time as none (review: the report threw on 'infinity')", async () => {
    const unbounded = {
      ...recurring('0 2 * * *'),
      starts_at: -Infinity as unknown as Date,
      ends_at: Infinity as unknown as Date,
    };
    expect((await nextRun(unbounded, NOW, UTC)).at).to.eql(
      new Date('2026-11-22T02:00:00Z'),
    );
    expect(
      await nextRun(oneTime(Infinity as unknown as Date), NOW, UTC),
    ).to.eql({
      at: null,
      problem: 'date_time is not a finite instant',
    });
  });

  it('gives none for a recurring scheduler in a zone it cannot read, as the producer never fires it; a one-time run needs no zone', async () => {
    expect(
      await nextRun(
        {...recurring('0 2 * * *'), timezone: 'Mars/Olympus'},
        NOW,
        UTC,
      ),
    ).to.eql({
      at: null,
      problem:
        'unknown time zone "Mars/Olympus": the producer does not fire it',
    });
    const at = new Date('2026-11-22T08:00:00Z');
    expect(
      await nextRun({...oneTime(at), timezone: 'Mars/Olympus'}, NOW, UTC),
    ).to.eql({at});
  });

  it("uses the scheduler's own zone over the context's", async () => {
    expect(
      (
        await nextRun(
          {...recurring('0 2 * * *'), timezone: 'Europe/Berlin'},
          NOW,
          UTC,
        )
      ).at,
    ).to.eql(new Date('2026-11-22T01:00:00Z'));
  });

  it('gives none for inactive, stay-alive and invalid schedulers, saying why', async () => {
    expect(
      await nextRun({...recurring('* * * * *'), status: false}, NOW, UTC),
    ).to.eql({at: null, problem: 'inactive'});
    expect(
      await nextRun({...recurring('* * * * *'), stay_alive: true}, NOW, UTC),
    ).to.eql({at: null, problem: 'stay-alive'});
    const invalid = await nextRun(recurring('61 * * * *'), NOW, UTC);
    expect(invalid.at).to.be.null();
    expect(invalid.problem).to.match(/^invalid schedule: /);
  });
});
