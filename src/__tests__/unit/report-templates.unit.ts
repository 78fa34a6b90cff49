import {expect} from '@loopback/testlab';
import {
  resolveTemplate,
  resolveTemplatesDeep,
  templateValues,
} from '../../reports/template-variables';
import {parseInstant, parsePeriod} from '../../reports/report-period';

const at = (iso: string) => new Date(iso);

describe('report template variables', () => {
  it('gives today, yesterday and date on an ordinary day', () => {
    expect(
      templateValues({now: at('2026-11-21T19:45:00Z'), timeZone: 'UTC'}),
    ).to.deepEqual({
      date: '2026-11-21',
      today: '2026-11-21',
      yesterday: '2026-11-20',
    });
  });

  it('steps yesterday back over a month boundary', () => {
    const values = templateValues({
      now: at('2026-03-01T00:30:00Z'),
      timeZone: 'UTC',
    });
    expect(values.today).to.equal('2026-03-01');
    expect(values.yesterday).to.equal('2026-02-28');
  });

  it('steps yesterday back to 29 February in a leap year', () => {
    expect(
      templateValues({now: at('2028-03-01T12:00:00Z'), timeZone: 'UTC'})
        .yesterday,
    ).to.equal('2028-02-29');
  });

  it('steps yesterday back over a year boundary', () => {
    const values = templateValues({
      now: at('2027-01-01T08:00:00Z'),
      timeZone: 'UTC',
    });
    expect(values.today).to.equal('2027-01-01');
    expect(values.yesterday).to.equal('2026-12-31');
  });

  it('reads the calendar in CRON_TZ, not in UTC', () => {
    // 23:30 UTC on 31 December is already New Year in Berlin ...
    expect(
      templateValues({
        now: at('2026-12-31T23:30:00Z'),
        timeZone: 'Europe/Berlin',
      }),
    ).to.containDeep({today: '2027-01-01', yesterday: '2026-12-31'});
    // ... and still the 31st in New York at 03:00 UTC on 1 January.
    expect(
      templateValues({
        now: at('2027-01-01T03:00:00Z'),
        timeZone: 'America/New_York',
      }),
    ).to.containDeep({today: '2026-12-31', yesterday: '2026-12-30'});
  });

  it('resolves known variables, with or without inner spaces, and the user id', () => {
    expect(
      resolveTemplate('sales-{{date}}_{{ yesterday }}-u{{user_id}}', {
        now: at('2026-11-21T10:00:00Z'),
        timeZone: 'UTC',
        userId: 42,
      }),
    ).to.equal('sales-2026-11-21_2026-11-20-u42');
  });

  it('leaves unknown variables, and {{user_id}} without a user, as written', () => {
    expect(
      resolveTemplate('{{region}}-{{today}}-{{user_id}}-{today}', {
        now: at('2026-11-21T10:00:00Z'),
        timeZone: 'UTC',
        userId: null,
      }),
    ).to.equal('{{region}}-2026-11-21-{{user_id}}-{today}');
  });

  it('resolves variables in every string of nested report params', () => {
    expect(
      resolveTemplatesDeep(
        {from: '{{yesterday}}', nested: {list: ['{{today}}', 3, true]}},
        {now: at('2026-01-01T00:00:00Z'), timeZone: 'UTC'},
      ),
    ).to.deepEqual({
      from: '2025-12-31',
      nested: {list: ['2026-01-01', 3, true]},
    });
  });
});

describe('report periods', () => {
  it('reads a date-only value as midnight in CRON_TZ', () => {
    expect(
      parseInstant('2026-07-01', 'from', 'Europe/Berlin').toISOString(),
    ).to.equal('2026-06-30T22:00:00.000Z');
    expect(
      parseInstant('2026-01-01', 'from', 'Europe/Berlin').toISOString(),
    ).to.equal('2025-12-31T23:00:00.000Z');
  });

  it('defaults to yesterday in CRON_TZ', () => {
    const period = parsePeriod({}, 'UTC', at('2027-01-01T05:00:00Z'));
    expect(period.from.toISOString()).to.equal('2026-12-31T00:00:00.000Z');
    expect(period.to.toISOString()).to.equal('2027-01-01T00:00:00.000Z');
  });

  it('refuses impossible dates, dates without a zone, reversed and over-long periods', () => {
    const now = at('2026-11-21T00:00:00Z');
    for (const params of [
      {from: '2026-02-30'},
      {from: '2026-11-01T10:00:00'},
      {from: 20261101},
      {from: '2026-11-10', to: '2026-11-01'},
      {from: '2024-01-01', to: '2026-01-01'},
    ]) {
      expect(() => parsePeriod(params, 'UTC', now)).to.throw(
        /report_params|period/,
      );
    }
  });
});
