import {expect} from '@loopback/testlab';
import ICAL from 'ical.js';
import {
  checkParsedIntervals,
  importAllDayDates,
  MAX_OCCURRENCES_EXAMINED,
  NotICalendarError,
  TooManyDatesError,
} from '../../calendars/ical-dates';

const NOW = new Date('2026-11-25T00:00:00Z');

/** An all-day event from 2026-12-01 with the `rule` line is refused with `message`. */
function expectRuleRefused(rule: string, message: string | RegExp): void {
  expect(() =>
    importAllDayDates(
      oneEvent(['DTSTART;VALUE=DATE:20261201', rule]),
      NOW,
      20_000,
    ),
  ).to.throw(NotICalendarError, {message});
}

/** One all-day VEVENT with the given extra lines, in a VCALENDAR. */
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

describe('iCalendar import: hostile files', () => {
  // ical.js throws a plain Error ("Same occurrence found twice") for a
  // sub-daily rule on a DATE start: that must be the caller's 422, not a 500.
  for (const freq of ['HOURLY', 'MINUTELY', 'SECONDLY']) {
    it(`refuses FREQ=${freq} on an all-day event as not iCalendar it can read`, () => {
      const text = oneEvent([
        'DTSTART;VALUE=DATE:20261201',
        `RRULE:FREQ=${freq}`,
      ]);
      expect(() => importAllDayDates(text, NOW, 20_000)).to.throw(
        NotICalendarError,
      );
    });
  }

  // Without COUNT or UNTIL, a daily rule from year 1 walks ~740,000
  // occurrences before the window (16 s of event loop for a 150-byte body).
  it('refuses a rule that needs more occurrences than the budget before the window ends', () => {
    const text = oneEvent(['DTSTART;VALUE=DATE:00010101', 'RRULE:FREQ=DAILY']);
    expect(MAX_OCCURRENCES_EXAMINED).to.be.below(740_000);
    let refused: unknown;
    try {
      importAllDayDates(text, NOW, 20_000);
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(TooManyDatesError);
    expect((refused as Error).message).to.match(/occurrences/);
  }).timeout(120_000); // ical.js walks 20,000 occurrences first: seconds

  it('still expands a daily rule from 1990 (legitimate history) inside the window', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:19900101',
      'RRULE:FREQ=DAILY;INTERVAL=7',
    ]);
    const {dates} = importAllDayDates(text, NOW, 20_000);
    expect(dates.length).to.be.within(260, 262);
    expect(dates[0] >= '2026-11-24').to.be.true();
  });

  it('clamps a yearly event spanning thousands of years to the five-year window', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:20261201',
      'DTEND;VALUE=DATE:99991231',
      'RRULE:FREQ=YEARLY',
    ]);
    const {dates} = importAllDayDates(text, NOW, 20_000);
    expect(dates[0]).to.equal('2026-12-01');
    expect(dates[dates.length - 1]).to.equal('2031-11-25');
  });

  it('refuses a single event longer than a calendar holds', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:00010101',
      'DTEND;VALUE=DATE:99991231',
    ]);
    expect(() => importAllDayDates(text, NOW, 20_000)).to.throw(
      TooManyDatesError,
    );
  });
});

describe('iCalendar import: days that do not exist', () => {
  // RFC 5545 3.3.10: a recurrence that falls on a day the month does not
  // have is ignored. ical.js rolls it over (30 February became 2 March), and
  // a blackout calendar then skipped fires on a day the file never named.
  it('ignores 30 February instead of blacking out 1 or 2 March', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:20270201',
      'RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30',
    ]);
    const {dates} = importAllDayDates(text, NOW, 20_000);
    expect(dates.filter(d => d.slice(5, 7) === '03')).to.deepEqual([]);
  });

  it('keeps 29 February only in leap years for a yearly leap-day event', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:20280229',
      'RRULE:FREQ=YEARLY;COUNT=5',
    ]);
    const {dates} = importAllDayDates(text, NOW, 20_000);
    expect(dates).to.deepEqual(['2028-02-29']);
  });

  it('keeps a monthly 31st only in months that have one', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:20270131',
      'RRULE:FREQ=MONTHLY;COUNT=4',
    ]);
    const {dates} = importAllDayDates(text, NOW, 20_000);
    expect(dates).to.deepEqual([
      '2027-01-31',
      '2027-03-31',
      '2027-05-31',
      '2027-07-31',
    ]);
  });

  it('still expands BYMONTHDAY=-1 (the last day of each month)', () => {
    const text = oneEvent([
      'DTSTART;VALUE=DATE:20270131',
      'RRULE:FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=3',
    ]);
    const {dates} = importAllDayDates(text, NOW, 20_000);
    expect(dates).to.deepEqual(['2027-01-31', '2027-02-28', '2027-03-31']);
  });
});

describe('iCalendar import: values ical.js reads only when asked (review: each was a 500)', () => {
  const wrapped = (lines: string[]) => oneEvent(lines);
  const unreadable: Array<[string, string]> = [
    ['a DTSTART with letters', wrapped(['DTSTART;VALUE=DATE:2027AB25'])],
    [
      'a DURATION that is no duration',
      wrapped(['DTSTART;VALUE=DATE:20271201', 'DURATION:PXYZ']),
    ],
    [
      'an UNTIL that is no date',
      wrapped([
        'DTSTART;VALUE=DATE:20271201',
        'RRULE:FREQ=DAILY;UNTIL=garbage',
      ]),
    ],
    [
      'an RDATE that is no date',
      wrapped(['DTSTART;VALUE=DATE:20271201', 'RDATE;VALUE=DATE:xx']),
    ],
    [
      'an EXDATE that is no date',
      wrapped([
        'DTSTART;VALUE=DATE:20271201',
        'RRULE:FREQ=YEARLY',
        'EXDATE:zz',
      ]),
    ],
    ['a body of one space', ' '],
    ['an empty body', ''],
    ['binary junk', '\u0000\u0001\u00ff{}[]BEGIN:\r\n:::'],
  ];
  for (const [what, text] of unreadable) {
    it(`refuses ${what} as not iCalendar it can read, saying nothing of our code`, () => {
      let thrown: unknown;
      try {
        importAllDayDates(text, NOW, 20_000);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).to.be.instanceOf(NotICalendarError);
      expect((thrown as Error).message).to.not.match(
        /Cannot read|undefined|is not a function|properties of/,
      );
    });
  }

  it('reads two VCALENDARs one after another (a legal stream) as one file', () => {
    const text =
      oneEvent(['DTSTART;VALUE=DATE:20271201']) +
      oneEvent(['DTSTART;VALUE=DATE:20271224']);
    expect(importAllDayDates(text, NOW, 20_000).dates).to.deepEqual([
      '2027-12-01',
      '2027-12-24',
    ]);
  });

  it('refuses a day that does not exist instead of rolling it over (2027-13-99 became 2028-04-08)', () => {
    for (const lines of [
      ['DTSTART;VALUE=DATE:20271399'],
      ['DTSTART;VALUE=DATE:20270230'],
      ['DTSTART;VALUE=DATE:20271201', 'DTEND;VALUE=DATE:20271232'],
      [
        'DTSTART;VALUE=DATE:20271201',
        'RRULE:FREQ=YEARLY',
        'RDATE;VALUE=DATE:20270431',
      ],
    ]) {
      expect(() => importAllDayDates(oneEvent(lines), NOW, 20_000)).to.throw(
        /is not a day of the calendar/,
      );
    }
  });

  it('keeps a year below 100 as that year, not as 19xx (0050 became 1950)', () => {
    expect(
      importAllDayDates(oneEvent(['DTSTART;VALUE=DATE:00500101']), NOW, 20_000)
        .dates,
    ).to.deepEqual(['0050-01-01']);
  });

  // Review of the fix: ical.js reads these leniently and rolls them over.
  for (const [what, lines] of [
    ['a day with a letter', ['DTSTART;VALUE=DATE:2027120X']],
    ['a month with a letter', ['DTSTART;VALUE=DATE:20270A01']],
    ['a negative year', ['DTSTART;VALUE=DATE:-0010101']],
    [
      'an UNTIL that does not exist',
      ['DTSTART;VALUE=DATE:20261201', 'RRULE:FREQ=DAILY;UNTIL=20261232'],
    ],
    [
      'an UNTIL at a 25th hour',
      [
        'DTSTART;VALUE=DATE:20261201',
        'RRULE:FREQ=DAILY;UNTIL=20261231T250000Z',
      ],
    ],
  ] as const) {
    it(`refuses ${what} instead of importing a day the file did not name`, () => {
      expect(() =>
        importAllDayDates(oneEvent([...lines]), NOW, 20_000),
      ).to.throw(/is not a day of the calendar/);
    });
  }

  it('refuses days a calendar cannot hold (year 0, year 10000), which made the calendar impossible to edit', () => {
    for (const lines of [
      ['DTSTART;VALUE=DATE:00000101'],
      ['DTSTART;VALUE=DATE:99991231', 'DURATION:P3D'],
    ]) {
      expect(() => importAllDayDates(oneEvent(lines), NOW, 20_000)).to.throw(
        /which a calendar cannot hold/,
      );
    }
  });

  // RFC 5545: INTERVAL is a positive integer. ical.js reads 0, -2 and 1.5
  // as 1, so a rule the file got wrong was imported as every day.
  for (const interval of ['0', '-2', '1.5', '00']) {
    it(`refuses RRULE INTERVAL=${interval} instead of reading it as 1`, () => {
      expectRuleRefused(
        `RRULE:FREQ=DAILY;INTERVAL=${interval};COUNT=3`,
        `the body's RRULE INTERVAL ${JSON.stringify(interval)} is not a positive integer`,
      );
    });
  }

  // Left alone in an earlier review: ical.js walks a DAILY or WEEKLY period
  // about a day at a time, so INTERVAL=100000000 spun until the import's
  // budget ran out. A period longer than a calendar's 10,000 years is refused.
  for (const [rule, max] of [
    ['FREQ=DAILY;INTERVAL=100000000', 3_652_425],
    ['FREQ=DAILY;INTERVAL=3652426', 3_652_425],
    ['FREQ=WEEKLY;INTERVAL=521776', 521_775],
    ['FREQ=YEARLY;INTERVAL=2147483648', 10_000],
    ['INTERVAL=99999999999999999999999;FREQ=MONTHLY', 120_000],
    ['FREQ=DAILY;FREQ=YEARLY;INTERVAL=5000000', 3_652_425],
  ] as const) {
    it(`refuses RRULE:${rule.slice(0, 40)}, whose period is over 10,000 years`, () => {
      expectRuleRefused(
        `RRULE:${rule}`,
        new RegExp(
          `RRULE INTERVAL \\d+ with FREQ=[A-Z]+ repeats less than once in the 10,000 years a calendar holds \\(at most ${max}\\)`,
        ),
      );
    });
  }

  // Review: parameters this check could not read hid the rule from it,
  // while ical.js still read it (a 100,000,000-day period ran to the
  // import's time limit; INTERVAL=0 imported as yearly).
  for (const rule of [
    'RRULE;A:B=1:FREQ=DAILY;INTERVAL=100000000',
    'RRULE;X-A=a"b:FREQ=YEARLY;INTERVAL=0',
    'RRULE;X"A=1:FREQ=DAILY;INTERVAL=100000000',
    'RRULE;X-A="a"b:FREQ=DAILY;INTERVAL=100000000',
  ]) {
    it(`refuses an RRULE behind parameters it cannot read: ${rule}`, () => {
      expectRuleRefused(rule, /RRULE line whose parameters cannot be read/);
    });
  }

  it('checks the bound on the rule as ical.js read it too', () => {
    const component = new ICAL.Component(
      ICAL.parse(
        oneEvent([
          'DTSTART;VALUE=DATE:20261201',
          'RRULE:FREQ=WEEKLY;INTERVAL=600000',
        ]),
      ) as unknown[],
    ).getFirstSubcomponent('vevent')!;
    expect(() => checkParsedIntervals(component)).to.throw(NotICalendarError, {
      message: /INTERVAL 600000 with FREQ=WEEKLY .*\(at most 521775\)/,
    });
    const fine = new ICAL.Component(
      ICAL.parse(
        oneEvent([
          'DTSTART;VALUE=DATE:20261201',
          'RRULE:FREQ=YEARLY;INTERVAL=10',
        ]),
      ) as unknown[],
    ).getFirstSubcomponent('vevent')!;
    expect(() => checkParsedIntervals(fine)).to.not.throw();
  });

  it('still imports a period within 10,000 years: yearly every ten years, daily at the bound', () => {
    const decennial = oneEvent([
      'DTSTART;VALUE=DATE:20261201',
      'RRULE:FREQ=YEARLY;INTERVAL=10',
    ]);
    expect(importAllDayDates(decennial, NOW, 20_000).dates).to.eql([
      '2026-12-01',
    ]);
    // DTSTART long before the window: the one repeat lands inside it.
    const longAgo = oneEvent([
      'DTSTART;VALUE=DATE:18900101',
      'RRULE:FREQ=DAILY;INTERVAL=50000',
    ]);
    expect(importAllDayDates(longAgo, NOW, 20_000).dates).to.eql([
      '2026-11-24',
    ]);
  });

  it('reads a folded RRULE with INTERVAL=2 and checks a folded INTERVAL=0', () => {
    const folded = (interval: string) =>
      oneEvent([
        'DTSTART;VALUE=DATE:20261201',
        `RRULE:FREQ=DAILY;COUNT=3;INTER\r\n VAL=${interval}`,
      ]);
    expect(importAllDayDates(folded('2'), NOW, 20_000).dates).to.eql([
      '2026-12-01',
      '2026-12-03',
      '2026-12-05',
    ]);
    expect(() => importAllDayDates(folded('0'), NOW, 20_000)).to.throw(
      /RRULE INTERVAL "0" is not a positive integer/,
    );
  });

  // Review: the check was bypassed by a quoted parameter holding a colon
  // and by line ends JavaScript knows and ical.js does not, and it took
  // quadratic time over them.
  for (const [what, rule] of [
    [
      'a quoted parameter with a colon',
      'RRULE;X-FOO="a:b":INTERVAL=0;FREQ=DAILY;COUNT=3',
    ],
    [
      'a quoted parameter with a semicolon',
      'RRULE;X-FOO="a;b:c":FREQ=DAILY;INTERVAL=0;COUNT=3',
    ],
    ['U+2028 inside the value', 'RRULE:FREQ=DAILY;COUNT=3\u2028;INTERVAL=0'],
    ['a lone CR inside the value', 'RRULE:FREQ=DAILY;COUNT=3\r;INTERVAL=0'],
  ] as const) {
    it(`refuses INTERVAL=0 behind ${what}`, () => {
      expect(() =>
        importAllDayDates(
          oneEvent(['DTSTART;VALUE=DATE:20261201', rule]),
          NOW,
          20_000,
        ),
      ).to.throw(/RRULE INTERVAL "0" is not a positive integer/);
    });
  }

  it('reads an RRULE-looking text inside a DESCRIPTION as text, however long', () => {
    const description = `DESCRIPTION:x${'\u2028RRULE;a'.repeat(8000)}\u2028RRULE:FREQ=DAILY;INTERVAL=0`;
    const {dates} = importAllDayDates(
      oneEvent(['DTSTART;VALUE=DATE:20261201', description]),
      NOW,
      20_000,
    );
    expect(dates).to.eql(['2026-12-01']);
  });
});
