import {expect} from '@loopback/testlab';
import {ProducerBindings} from '../../keys';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, truncateAll} from '../fixtures/test-database';

const NOW = new Date('2026-11-24T12:00:00Z');

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

describe('calendar import: hostile iCalendar files (review of issue 26)', () => {
  let given: TestApp;
  let operator: AuthedClient;
  let admin: AuthedClient;
  let calendarId: number;

  before(async () => {
    given = await givenRunningApp({}, app =>
      app.bind(ProducerBindings.CLOCK).to(() => NOW),
    );
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    const team = await givenTeam(given.app);
    operator = asUser(given.client, team.operator);
    admin = asUser(given.client, team.admin);
    const created = await operator
      .post('/api/calendars')
      .send({name: 'Hostile', time_zone: 'Europe/London', kind: 'blackout'})
      .expect(201);
    calendarId = created.body.id;
  });

  async function importing(text: string) {
    return operator
      .post(`/api/calendars/${calendarId}/import`)
      .set('Content-Type', 'text/calendar')
      .send(text);
  }

  // ical.js throws a plain Error for a sub-daily rule on a DATE start: 500.
  it('answers 422 on /body for an hourly rule on an all-day event', async () => {
    const res = await importing(
      oneEvent(['DTSTART;VALUE=DATE:20261201', 'RRULE:FREQ=HOURLY']),
    );
    expect(res.status).to.equal(422);
    expect(res.body.error.details[0].path).to.equal('/body');
  });

  // ical.js never returns for a daily rule that no day satisfies: before,
  // this request hung the whole process (every request, every tick).
  it('answers 422 on /body for values ical.js reads only when asked, and for a body of one space (review: 500s)', async () => {
    for (const text of [
      oneEvent(['DTSTART;VALUE=DATE:2027AB25']),
      oneEvent(['DTSTART;VALUE=DATE:20271201', 'DURATION:PXYZ']),
      oneEvent(['DTSTART;VALUE=DATE:20271399']),
      ' ',
    ]) {
      const res = await importing(text);
      expect(res.status).to.equal(422);
      expect(res.body.error.details[0].path).to.equal('/body');
      expect(
        res.body.error.message + res.body.error.details[0].message,
      ).to.not.match(/Cannot read|is not a function/);
    }
    expect(given.logs.find('Request failed', {level: 'error'})).to.deepEqual(
      [],
    );
  });

  it('answers 422 on /body for a rule ical.js never finishes, and keeps serving', async () => {
    const res = await importing(
      oneEvent([
        'DTSTART;VALUE=DATE:00010101',
        'RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
      ]),
    );
    expect(res.status).to.equal(422);
    expect(res.body.error.details[0].path).to.equal('/body');
    const calendar = await operator
      .get(`/api/calendars/${calendarId}`)
      .expect(200);
    expect(calendar.body.dates).to.deepEqual([]);
  });

  it('refuses a third import of one user at once with 429 and Retry-After, while other users still import (review: one user filled the global queue)', async () => {
    const neverEnds = oneEvent([
      'DTSTART;VALUE=DATE:00010101',
      'RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
    ]);
    const first = [importing(neverEnds), importing(neverEnds)];
    await new Promise(resolve => setTimeout(resolve, 300));
    const third = await importing(neverEnds);
    expect(third.status).to.equal(429);
    expect(third.headers['retry-after']).to.equal('5');
    expect(third.body.error.message).to.match(/as one user may/);
    // Another user's import waits its turn and is done.
    const own = await admin
      .post('/api/calendars')
      .send({name: 'Own', time_zone: 'UTC', kind: 'blackout'})
      .expect(201);
    const theirs = await admin
      .post(`/api/calendars/${own.body.id}/import`)
      .set('Content-Type', 'text/calendar')
      .send(oneEvent(['DTSTART;VALUE=DATE:20271224']));
    expect(theirs.status).to.equal(200);
    for (const res of await Promise.all(first))
      expect(res.status).to.equal(422);
  });

  // Each import read the calendar's dates, parsed, then wrote the merge:
  // two imports (or an import and a PATCH) at once kept only the last one.
  it('keeps the days of two imports into the same calendar at once', async () => {
    const yearly = (day: string) =>
      oneEvent([`DTSTART;VALUE=DATE:2020${day}`, 'RRULE:FREQ=YEARLY']);
    const [a, b] = await Promise.all([
      importing(yearly('1225')),
      importing(yearly('0101')),
    ]);
    expect([a.status, b.status]).to.deepEqual([200, 200]);
    const calendar = await operator
      .get(`/api/calendars/${calendarId}`)
      .expect(200);
    expect(calendar.body.dates).to.have.length(10);
    expect(calendar.body.dates).to.containDeep(['2026-12-25', '2027-01-01']);
  });
});
