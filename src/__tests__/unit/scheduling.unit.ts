import {expect} from '@loopback/testlab';
import {
  compileCron,
  CronCache,
  cronMatches,
  InvalidCronError,
} from '../../scheduling/compiled-cron';
import {recurringDue} from '../../scheduling/due';
import {executionKey} from '../../scheduling/execution-key';
import {msUntilNextMinute, planSlots} from '../../scheduling/slots';
import {
  isValidTimeZone,
  slotClock,
  wallTimeAt,
} from '../../scheduling/wall-clock';

const at = (iso: string) => new Date(iso);

function dueIn(expression: string, iso: string, timeZone = 'UTC'): boolean {
  return recurringDue(compileCron(expression), slotClock(at(iso), timeZone));
}

/** Every UTC minute slot in [from, to) where the expression is due. */
function dueSlots(
  expression: string,
  from: string,
  to: string,
  timeZone: string,
) {
  const cron = compileCron(expression);
  const due: string[] = [];
  for (let t = at(from).getTime(); t < at(to).getTime(); t += 60_000) {
    if (recurringDue(cron, slotClock(new Date(t), timeZone))) {
      due.push(new Date(t).toISOString());
    }
  }
  return due;
}

describe('scheduling: due evaluation', () => {
  describe('the cron dialect people type (Vixie cron semantics)', () => {
    const vectors: Array<[string, string, boolean]> = [
      ['0 9 * * MON-FRI', '2026-11-23T09:00:00Z', true], // Monday
      ['0 9 * * MON-FRI', '2026-11-27T09:00:00Z', true], // Friday
      ['0 9 * * MON-FRI', '2026-11-21T09:00:00Z', false], // Saturday
      ['0 9 * * mon-fri', '2026-11-23T09:00:00Z', true],
      ['0 9 * * Mon,Wed', '2026-11-25T09:00:00Z', true],
      ['0 9 * * Mon,Wed', '2026-11-24T09:00:00Z', false],
      ['0 0 * * 7', '2026-11-22T00:00:00Z', true], // 7 is Sunday
      ['0 0 * * 7', '2026-11-23T00:00:00Z', false],
      ['0 0 * * 5-7', '2026-11-27T00:00:00Z', true], // Fri-Sun
      ['0 0 * * 5-7', '2026-11-28T00:00:00Z', true],
      ['0 0 * * 5-7', '2026-11-22T00:00:00Z', true],
      ['0 0 * * 5-7', '2026-11-23T00:00:00Z', false],
      ['0 0 * * MON-FRI/2', '2026-11-23T00:00:00Z', true], // Mon
      ['0 0 * * MON-FRI/2', '2026-11-24T00:00:00Z', false], // Tue
      ['0 0 * * MON-FRI/2', '2026-11-25T00:00:00Z', true], // Wed
      ['0 0 * * MON-FRI/2', '2026-11-27T00:00:00Z', true], // Fri
      ['0 0 1 JAN,JUL *', '2026-01-01T00:00:00Z', true],
      ['0 0 1 JAN,JUL *', '2026-07-01T00:00:00Z', true],
      ['0 0 1 JAN,JUL *', '2026-02-01T00:00:00Z', false],
      ['0 0 * jan-mar SUN', '2026-01-04T00:00:00Z', true],
      ['0 0 * jan-mar SUN', '2026-04-05T00:00:00Z', false],
      // Both day fields restricted, with names: either one matching is enough.
      ['0 0 13 * FRI', '2026-12-13T00:00:00Z', true], // the 13th, a Sunday
      ['0 0 13 * FRI', '2026-11-27T00:00:00Z', true], // a Friday
      ['0 0 13 * FRI', '2026-11-28T00:00:00Z', false],
      ['@hourly', '2026-11-21T10:00:00Z', true],
      ['@hourly', '2026-11-21T10:01:00Z', false],
      ['@daily', '2026-11-21T00:00:00Z', true],
      ['@midnight', '2026-11-21T00:00:00Z', true],
      ['@daily', '2026-11-21T01:00:00Z', false],
      ['@weekly', '2026-11-22T00:00:00Z', true], // Sunday
      ['@weekly', '2026-11-23T00:00:00Z', false],
      ['@monthly', '2026-12-01T00:00:00Z', true],
      ['@monthly', '2026-12-02T00:00:00Z', false],
      ['@yearly', '2027-01-01T00:00:00Z', true],
      ['@annually', '2027-01-01T00:00:00Z', true],
      ['@yearly', '2026-12-01T00:00:00Z', false],
      ['@DAILY', '2026-11-21T00:00:00Z', true],
      // Duplicates Vixie cron takes and cron-parser alone refuses.
      ['0 0 * * 0,7', '2026-11-22T00:00:00Z', true],
      ['0 0 * * SUN,7', '2026-11-22T00:00:00Z', true],
      ['0 0 * * 5-7,0', '2026-11-28T00:00:00Z', true],
      ['0 0 * * 5-7,0', '2026-11-24T00:00:00Z', false],
      ['1,1 * * * *', '2026-11-24T00:01:00Z', true],
      // A list that begins with * counts as unrestricted (Vixie's day rule).
      ['0 0 13 * */2,1', '2026-11-13T00:00:00Z', false], // a Friday
      ['0 0 13 * 1,*/2', '2026-12-13T00:00:00Z', true], // a Sunday: either day
    ];
    for (const [expression, iso, due] of vectors) {
      it(`${JSON.stringify(expression)} ${due ? 'is' : 'is not'} due at ${iso}`, () => {
        expect(dueIn(expression, iso)).to.equal(due);
      });
    }

    it('matches a name and its number with the same compiled tables', () => {
      const named = compileCron('0 9 * JAN-MAR MON-FRI');
      const numeric = compileCron('0 9 * 1-3 1-5');
      expect(named.months).to.deepEqual(numeric.months);
      expect(named.daysOfWeek).to.deepEqual(numeric.daysOfWeek);
      expect(named.expression).to.equal('0 9 * JAN-MAR MON-FRI');
      expect(named.numeric).to.equal('0 9 * 1,2,3 1,2,3,4,5');
    });
  });

  describe('cron vectors (UTC)', () => {
    const vectors: Array<[string, string, boolean]> = [
      ['* * * * *', '2026-11-21T13:37:00Z', true],
      ['30 6 * * *', '2026-11-21T06:30:00Z', true],
      ['30 6 * * *', '2026-11-21T06:31:00Z', false],
      ['30 6 * * *', '2026-11-21T07:30:00Z', false],
      ['0 9-17 * * 1-5', '2026-11-23T09:00:00Z', true], // Monday
      ['0 9-17 * * 1-5', '2026-11-23T17:00:00Z', true],
      ['0 9-17 * * 1-5', '2026-11-23T18:00:00Z', false],
      ['0 9-17 * * 1-5', '2026-11-21T09:00:00Z', false], // Saturday
      ['*/15 * * * *', '2026-11-21T10:45:00Z', true],
      ['*/15 * * * *', '2026-11-21T10:05:00Z', false],
      ['5-20/5 * * * *', '2026-11-21T10:05:00Z', true],
      ['5-20/5 * * * *', '2026-11-21T10:20:00Z', true],
      ['5-20/5 * * * *', '2026-11-21T10:25:00Z', false],
      ['5-20/5 * * * *', '2026-11-21T10:00:00Z', false],
      ['0,30 * * * *', '2026-11-21T10:30:00Z', true],
      ['0,30 * * * *', '2026-11-21T10:31:00Z', false],
      ['0 0 * * 0', '2026-11-22T00:00:00Z', true], // Sunday is 0
      ['0 0 * * 0', '2026-11-23T00:00:00Z', false],
      ['0 0 1 1 *', '2027-01-01T00:00:00Z', true],
      ['0 0 * 12 *', '2026-11-30T00:00:00Z', false],
      // Either day field matches when both are restricted...
      ['0 0 13 * 5', '2026-11-20T00:00:00Z', true], // a Friday, not the 13th
      ['0 0 13 * 5', '2026-12-13T00:00:00Z', true], // the 13th, a Sunday
      ['0 0 13 * 5', '2026-11-21T00:00:00Z', false],
      // ...but both must match when one starts with * (Vixie cron).
      ['0 0 13 * *', '2026-11-20T00:00:00Z', false],
      ['0 0 * * 5', '2026-12-13T00:00:00Z', false],
      ['0 0 */2 * 1', '2026-11-23T00:00:00Z', true], // 23rd (odd), Monday
      ['0 0 */2 * 1', '2026-11-25T00:00:00Z', false], // 25th, Wednesday
      ['0 0 */2 * 1', '2026-11-30T00:00:00Z', false], // Monday, even day
    ];
    for (const [expression, iso, due] of vectors) {
      it(`${expression} is ${due ? '' : 'not '}due at ${iso}`, () => {
        expect(dueIn(expression, iso)).to.equal(due);
      });
    }

    it('fires "31" only in months that have a 31st', () => {
      expect(
        dueSlots(
          '0 0 31 * *',
          '2026-11-01T00:00:00Z',
          '2027-02-01T00:00:00Z',
          'UTC',
        ),
      ).to.deepEqual(['2026-12-31T00:00:00.000Z', '2027-01-31T00:00:00.000Z']);
    });

    it('refuses 30 February, a day that never exists', () => {
      expect(() => compileCron('0 0 30 2 *')).to.throw(InvalidCronError);
    });

    it('fires 29 February only in leap years', () => {
      expect(
        dueSlots(
          '0 12 29 2 *',
          '2027-02-27T00:00:00Z',
          '2027-03-02T00:00:00Z',
          'UTC',
        ),
      ).to.deepEqual([]);
      expect(
        dueSlots(
          '0 12 29 2 *',
          '2028-02-27T00:00:00Z',
          '2028-03-02T00:00:00Z',
          'UTC',
        ),
      ).to.deepEqual(['2028-02-29T12:00:00.000Z']);
    });
  });

  describe('time zones and DST', () => {
    it('evaluates in the scheduler time zone', () => {
      expect(
        dueIn('0 9 * * *', '2026-11-21T08:00:00Z', 'Europe/Berlin'),
      ).to.be.true();
      expect(
        dueIn('0 9 * * *', '2026-11-21T09:00:00Z', 'Europe/Berlin'),
      ).to.be.false();
      expect(
        dueIn('0 9 * * *', '2026-11-21T14:00:00Z', 'America/New_York'),
      ).to.be.true();
    });

    it('Berlin spring-forward: a run inside the gap fires once, at 03:00', () => {
      expect(
        dueSlots(
          '30 2 * * *',
          '2026-03-28T00:00:00Z',
          '2026-03-30T00:00:00Z',
          'Europe/Berlin',
        ),
      ).to.deepEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z']);
    });

    it('Berlin spring-forward: a run at 03:00 fires once', () => {
      expect(
        dueSlots(
          '0 3 * * *',
          '2026-03-29T00:00:00Z',
          '2026-03-30T00:00:00Z',
          'Europe/Berlin',
        ),
      ).to.deepEqual(['2026-03-29T01:00:00.000Z']);
    });

    it('Berlin fall-back: a run in the repeated hour fires once, in the first pass', () => {
      expect(
        dueSlots(
          '30 2 * * *',
          '2026-10-25T00:00:00Z',
          '2026-10-26T00:00:00Z',
          'Europe/Berlin',
        ),
      ).to.deepEqual(['2026-10-25T00:30:00.000Z']);
    });

    it('New York spring-forward: 02:30 fires once, at 03:00 EDT', () => {
      expect(
        dueSlots(
          '30 2 * * *',
          '2026-03-08T00:00:00Z',
          '2026-03-09T00:00:00Z',
          'America/New_York',
        ),
      ).to.deepEqual(['2026-03-08T07:00:00.000Z']);
    });

    it('New York fall-back: 01:30 fires once, in EDT', () => {
      expect(
        dueSlots(
          '30 1 * * *',
          '2026-11-01T00:00:00Z',
          '2026-11-02T00:00:00Z',
          'America/New_York',
        ),
      ).to.deepEqual(['2026-11-01T05:30:00.000Z']);
    });

    it('keeps jobs with a wildcard hour on real time across both changes', () => {
      const autumn = dueSlots(
        '*/30 * * * *',
        '2026-10-25T00:00:00Z',
        '2026-10-25T03:00:00Z',
        'Europe/Berlin',
      );
      expect(autumn).to.deepEqual([
        '2026-10-25T00:00:00.000Z',
        '2026-10-25T00:30:00.000Z',
        '2026-10-25T01:00:00.000Z',
        '2026-10-25T01:30:00.000Z',
        '2026-10-25T02:00:00.000Z',
        '2026-10-25T02:30:00.000Z',
      ]);
      const spring = dueSlots(
        '*/30 * * * *',
        '2026-03-29T00:00:00Z',
        '2026-03-29T02:00:00Z',
        'Europe/Berlin',
      );
      expect(spring).to.have.length(4);
    });

    it('fires "every minute" once per real minute through a whole DST day', () => {
      const day = dueSlots(
        '* * * * *',
        '2026-03-29T00:00:00Z',
        '2026-03-30T00:00:00Z',
        'Europe/Berlin',
      );
      expect(day).to.have.length(1440);
    });

    it('reads wall-clock fields, Sunday as 0', () => {
      expect(
        wallTimeAt(at('2026-11-22T23:30:00Z'), 'Europe/Berlin'),
      ).to.deepEqual({
        year: 2026,
        month: 11,
        day: 23,
        hour: 0,
        minute: 30,
        dayOfWeek: 1,
      });
    });

    it('validates IANA zone names', () => {
      expect(isValidTimeZone('Europe/Berlin')).to.be.true();
      expect(isValidTimeZone('UTC')).to.be.true();
      expect(isValidTimeZone('Mars/Olympus')).to.be.false();
      expect(isValidTimeZone('../etc/passwd')).to.be.false();
      expect(isValidTimeZone('')).to.be.false();
    });
  });

  describe('compiled expressions', () => {
    it('refuses what the spec does not allow, naming the problem', () => {
      expect(() => compileCron('* * * *')).to.throw(InvalidCronError);
      expect(() => compileCron('0 0 ? * MON')).to.throw(/Quartz syntax/);
    });

    it('cache each text once, invalid ones included', () => {
      const cache = new CronCache();
      const first = cache.get('*/5 * * * *');
      expect(cache.get('*/5 * * * *')).to.equal(first);
      expect(cache.get('61 * * * *')).to.be.instanceOf(InvalidCronError);
      expect(cache.size).to.equal(2);
    });

    it('treat Sunday as 0 whatever cron-parser lists', () => {
      const cron = compileCron('0 0 * * *');
      for (let day = 0; day < 7; day++) {
        expect(cron.daysOfWeek[day]).to.equal(1);
      }
      expect(
        cronMatches(cron, wallTimeAt(at('2026-11-22T00:00:00Z'), 'UTC')),
      ).to.be.true();
    });
  });

  describe('execution keys', () => {
    it('are cron-<year>-<month>-<day>-<hour>-<minute> in UTC, zero-padded', () => {
      expect(executionKey(at('2026-03-09T07:05:00Z'))).to.equal(
        'cron-2026-03-09-07-05',
      );
      expect(executionKey(at('2026-12-31T23:59:00Z'))).to.equal(
        'cron-2026-12-31-23-59',
      );
    });

    it('differ for the two passes of a repeated hour', () => {
      expect(executionKey(at('2026-10-25T00:30:00Z'))).to.not.equal(
        executionKey(at('2026-10-25T01:30:00Z')),
      );
    });
  });

  describe('slot planning', () => {
    const iso = (dates: Date[]) =>
      dates.map(d => d.toISOString().slice(11, 16));

    it('evaluates every slot since the last one, so a late tick skips nothing', () => {
      const plan = planSlots(
        at('2026-11-21T10:03:20Z'),
        at('2026-11-21T10:00:00Z'),
        5,
      );
      expect(iso(plan.due)).to.deepEqual(['10:01', '10:02', '10:03']);
      expect(plan.skipped).to.deepEqual([]);
    });

    it('does not fire slots older than the catch-up window, and lists them', () => {
      const plan = planSlots(
        at('2026-11-21T10:30:00Z'),
        at('2026-11-21T10:20:00Z'),
        5,
      );
      expect(iso(plan.due)).to.deepEqual([
        '10:25',
        '10:26',
        '10:27',
        '10:28',
        '10:29',
        '10:30',
      ]);
      expect(iso(plan.skipped)).to.deepEqual([
        '10:21',
        '10:22',
        '10:23',
        '10:24',
      ]);
    });

    it('with catch-up 0 evaluates only the current minute', () => {
      const plan = planSlots(
        at('2026-11-21T10:30:00Z'),
        at('2026-11-21T10:20:00Z'),
        0,
      );
      expect(iso(plan.due)).to.deepEqual(['10:30']);
      expect(plan.skipped).to.have.length(9);
    });

    it('evaluates the catch-up window when there is no history', () => {
      expect(
        iso(planSlots(at('2026-11-21T10:30:10Z'), undefined, 2).due),
      ).to.deepEqual(['10:28', '10:29', '10:30']);
    });

    it('evaluates nothing twice', () => {
      expect(
        planSlots(at('2026-11-21T10:30:59Z'), at('2026-11-21T10:30:00Z'), 5)
          .due,
      ).to.deepEqual([]);
    });

    it('bounds the list of skipped slots after a long outage', () => {
      const plan = planSlots(
        at('2026-11-21T10:00:00Z'),
        at('2026-11-01T00:00:00Z'),
        5,
        1440,
      );
      expect(plan.skipped).to.have.length(1440);
    });

    it('aligns ticks to the next minute boundary', () => {
      expect(msUntilNextMinute(at('2026-11-21T10:00:59.250Z'))).to.equal(750);
      expect(msUntilNextMinute(at('2026-11-21T10:01:00.000Z'))).to.equal(60000);
    });
  });
});
