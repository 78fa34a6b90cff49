import {expect} from '@loopback/testlab';
import path from 'node:path';
import type {Locator, Page} from 'playwright-core';
import {
  expectAccessible,
  givenBrowser,
  saveScreenshot,
  TestBrowser,
} from '../fixtures/browser';
import {givenUser, TEST_PASSWORD, TestUser} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {insertSchedulers} from '../fixtures/test-producer';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

const HOLIDAYS_ICS = path.resolve(
  __dirname,
  '../../../src/__tests__/fixtures/calendars/holidays.ics',
);

/** The UTC date `days` after today's, YYYY-MM-DD: always ahead of the next runs' start. */
function utcDateIn(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
}

async function textOf(locator: Locator): Promise<string> {
  await locator.waitFor();
  return locator.innerText();
}

/** Issue 26, item 5: calendars, a scheduler's calendars/window/skips, and notices in the console. */
describe('console: calendars, windows and notices in Chromium', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let given: TestApp;
  let browser: TestBrowser;
  let admin: TestUser;
  let operator: TestUser;
  let viewer: TestUser;
  let base: string;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    await truncateAll();
    await givenCatalog();
    given = await givenRunningApp();
    base = new URL(given.app.restServer.url!).origin;
    admin = await givenUser(given.app, 'admin', {email: 'admin@example.com'});
    operator = await givenUser(given.app, 'operator', {
      email: 'operator@example.com',
    });
    viewer = await givenUser(given.app, 'viewer', {
      email: 'viewer@example.com',
    });
    browser = await givenBrowser('Europe/London');
    browser.context.setDefaultTimeout(10_000);
    page = await browser.context.newPage();
    page.on('pageerror', error => pageErrors.push(error.message));
  });
  after(async () => {
    await browser?.close();
    await given?.app.stop();
  });

  async function signIn(on: Page, email: string): Promise<void> {
    await on.goto(`${base}/schedulers`);
    const signOut = on.getByRole('button', {name: 'Sign out'});
    const signInHeading = on.getByRole('heading', {name: 'Sign in'});
    // Wait until the app has rendered one or the other: asked at once, a
    // loaded machine answers "no Sign out" before the app has started, and
    // the session then signed in never shows the Sign in form.
    await signOut.or(signInHeading).first().waitFor();
    if (await signOut.isVisible()) {
      await signOut.click();
    }
    await signInHeading.waitFor();
    await on.getByLabel('Email').fill(email);
    await on.getByLabel('Password').fill(TEST_PASSWORD);
    await on.getByRole('button', {name: 'Sign in'}).click();
    await on.getByRole('heading', {name: 'Schedulers'}).waitFor();
  }

  it('creates a calendar with the 422 beside the field, imports an .ics file, edits it, and refuses to delete one in use', async () => {
    await signIn(page, operator.email);
    await page.getByRole('link', {name: 'Calendars', exact: true}).click();
    await page.getByRole('heading', {name: 'Calendars'}).waitFor();
    await page.getByText('No calendars.').waitFor();
    await page.getByRole('link', {name: 'New calendar'}).click();
    await page.getByRole('heading', {name: 'New calendar'}).waitFor();
    await page.getByLabel('Name').fill('UK bank holidays');
    await page.getByLabel('Time zone').fill('Mars/Olympus');
    await page.getByLabel('Dates (YYYY-MM-DD, one a line)').fill('2026-02-30');
    await page.getByRole('button', {name: 'Save calendar'}).click();
    expect(await textOf(page.locator('#cal-zone-error'))).to.match(/zone/i);
    await page.getByLabel('Time zone').fill('Europe/London');
    await page
      .getByLabel('Dates (YYYY-MM-DD, one a line)')
      .fill('2026-12-25\n2026-12-26');
    await page
      .getByLabel('Times (cron expressions, one a line)')
      .fill('* 2-3 * * 0');
    await expectAccessible(page, 'calendar editor');
    await page.getByRole('button', {name: 'Save calendar'}).click();
    await page.getByRole('heading', {name: 'Calendars'}).waitFor();
    const row = page.getByRole('row', {name: /UK bank holidays/});
    expect(await textOf(row)).to.match(
      /blackout[\s\S]*Europe\/London[\s\S]*2026-12-25, 2026-12-26[\s\S]*\* 2-3 \* \* 0/,
    );

    await page
      .getByLabel('Import an .ics file into UK bank holidays')
      .setInputFiles(HOLIDAYS_ICS);
    expect(await textOf(page.getByRole('status'))).to.match(
      /Imported holidays\.ics into UK bank holidays: \d+ day\(s\) added/,
    );
    const [stored] = await sql<{dates: string[]}>(
      `SELECT dates FROM calendar WHERE name = 'UK bank holidays'`,
    );
    expect(stored.dates).to.containEql('2027-03-15');
    await expectAccessible(page, 'calendars');
    await saveScreenshot(page, 'calendars');

    await page.getByRole('link', {name: 'UK bank holidays'}).click();
    await page.getByRole('heading', {name: 'Edit calendar'}).waitFor();
    expect(await page.getByLabel('Time zone').inputValue()).to.equal(
      'Europe/London',
    );
    await page.getByLabel('Kind').selectOption('allowed');
    await page.getByRole('button', {name: 'Save calendar'}).click();
    await page.getByRole('heading', {name: 'Calendars'}).waitFor();
    await page.getByRole('row', {name: /UK bank holidays\s+allowed/}).waitFor();

    const [calendarId] = (
      await sql<{id: number}>(`SELECT id FROM calendar`)
    ).map(r => r.id);
    const [schedulerId] = await insertSchedulers([{schedule: '0 6 * * *'}]);
    await sql(`UPDATE scheduler SET calendar_ids = $1 WHERE id = $2`, [
      JSON.stringify([calendarId]),
      schedulerId,
    ]);
    await page.getByRole('button', {name: 'Delete'}).click();
    await page
      .getByRole('button', {name: 'Confirm delete of UK bank holidays'})
      .click();
    expect(await textOf(page.getByRole('alert'))).to.match(
      new RegExp(`${schedulerId}[\\s\\S]*HTTP 409`),
    );
    await sql(`UPDATE scheduler SET calendar_ids = '[]' WHERE id = $1`, [
      schedulerId,
    ]);
    await page.getByRole('button', {name: 'Delete'}).click();
    await page
      .getByRole('button', {name: 'Confirm delete of UK bank holidays'})
      .click();
    await page.getByText('Calendar UK bank holidays deleted.').waitFor();
    await page.getByText('No calendars.').waitFor();
  });

  it("shows a scheduler's calendars, active window, upcoming skips and skipped runs with their reason", async () => {
    const holiday = utcDateIn(2);
    const [{id: calendarId}] = await sql<{id: number}>(
      `INSERT INTO calendar (name, time_zone, kind, dates)
       VALUES ('Maintenance days', 'UTC', 'blackout', $1) RETURNING id`,
      [JSON.stringify([holiday])],
    );
    const [schedulerId] = await insertSchedulers([
      {schedule: '0 6 * * *', timezone: 'UTC'},
    ]);
    await sql(
      `UPDATE scheduler SET calendar_ids = $1, starts_at = '2026-01-01T00:00:00Z',
              ends_at = '2099-03-31T23:00:00Z', description = 'Daily report'
        WHERE id = $2`,
      [JSON.stringify([calendarId]), schedulerId],
    );
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, status, status_reason, container_id)
       VALUES ($1, 'cron-skipped-1', '2026-11-20T06:00:00Z', 'skipped',
               'blackout calendar Maintenance days (id ${calendarId})', 'test')`,
      [schedulerId],
    );
    await page.goto(`${base}/schedulers/${schedulerId}`);
    await page.getByRole('heading', {name: 'Daily report'}).waitFor();
    const calendars = page.getByRole('region', {name: 'Calendars and window'});
    await calendars.getByRole('link', {name: 'Maintenance days'}).waitFor();
    // Shown in the viewer's zone (London); the instants are the scheduler's.
    const window = page.getByTestId('active-window');
    expect(await textOf(window)).to.match(
      /from 1 Jan 2026, 00:00 until 1 Apr 2099, 00:00/,
    );
    expect(
      await window
        .locator('time')
        .evaluateAll(times => times.map(time => time.getAttribute('datetime'))),
    ).to.deepEqual(['2026-01-01T00:00:00.000Z', '2099-03-31T23:00:00.000Z']);
    const upcoming = page.getByTestId('upcoming-skips');
    expect(await textOf(upcoming)).to.match(/Maintenance days/);
    expect(
      await upcoming.locator('time').first().getAttribute('datetime'),
    ).to.match(new RegExp(`^${holiday}T06:00:00`));
    const skipped = page.getByRole('region', {name: 'Skipped runs'});
    const skippedRow = skipped.getByRole('row').nth(1);
    expect(await textOf(skippedRow)).to.match(
      /20 Nov 2026[\s\S]*blackout calendar Maintenance days/,
    );
    await expectAccessible(page, 'scheduler detail with calendars');
    await saveScreenshot(page, 'scheduler-calendars');
  });

  it("sets a scheduler's calendars, active window and e-mail notices in the editor, with the 422 beside the window", async () => {
    const [{id: calendarId}] = await sql<{id: number}>(
      `INSERT INTO calendar (name, time_zone, kind, times)
       VALUES ('Trading hours', 'Europe/London', 'allowed', '["* 8-16 * * 1-5"]') RETURNING id`,
    );
    const [schedulerId] = await insertSchedulers([
      {schedule: '0 9 * * *', timezone: 'Europe/London'},
    ]);
    await page.goto(`${base}/schedulers/${schedulerId}/edit`);
    await page.getByRole('heading', {name: 'Edit scheduler'}).waitFor();
    // The form is filled from the API first: choices made before would be overwritten.
    const description = page.getByLabel('Description');
    while ((await description.inputValue()) !== 'test') {
      await page.waitForTimeout(100);
    }
    await page.getByLabel('Trading hours (allowed)').check();
    await page.getByLabel('Active from').fill('2027-01-01T00:00');
    await page.getByLabel('Active until').fill('2026-12-01T00:00');
    await page.getByLabel('Also by e-mail').check();
    await page.getByRole('button', {name: 'Save'}).click();
    expect(await textOf(page.locator('#ends_at-error'))).to.match(
      /starts_at|after/i,
    );
    await page.getByLabel('Active until').fill('2027-03-31T23:00');
    await expectAccessible(page, 'scheduler editor with calendars');
    await page.getByRole('button', {name: 'Save'}).click();
    await page.getByRole('heading', {name: 'Calendars and window'}).waitFor();
    const [saved] = await sql<{
      calendar_ids: number[];
      starts_at: Date;
      ends_at: Date;
      notify: Record<string, boolean>;
    }>(
      `SELECT calendar_ids, starts_at, ends_at, notify FROM scheduler WHERE id = $1`,
      [schedulerId],
    );
    expect(saved.calendar_ids).to.deepEqual([calendarId]);
    // Read in the scheduler's zone (London: GMT in January, BST in March).
    expect(saved.starts_at.toISOString()).to.equal('2027-01-01T00:00:00.000Z');
    expect(saved.ends_at.toISOString()).to.equal('2027-03-31T22:00:00.000Z');
    expect(saved.notify).to.deepEqual({
      on_failure: true,
      on_recovery: true,
      email: true,
      group: false,
    });
  });

  it('shows each user only their own notices with an unread count, and marks them read', async () => {
    for (const [user, title] of [
      [admin, 'Scheduler 7 failed: Nightly export'],
      [admin, 'Scheduler 7 recovered: Nightly export'],
      [operator, 'Scheduler 9 failed: not for the admin'],
    ] as const) {
      await sql(
        `INSERT INTO notification (user_id, title, body) VALUES ($1, $2, 'Re-drive it as failed task 3.')`,
        [user.id, title],
      );
    }
    await signIn(page, admin.email);
    const link = page.getByTestId('notices-link');
    expect(await textOf(link.locator('.badge'))).to.equal('2');
    await link.click();
    await page.getByRole('heading', {name: 'Notices'}).waitFor();
    await page
      .getByText('Scheduler 7 recovered: Nightly export', {exact: true})
      .waitFor();
    expect(await page.getByText('not for the admin').count()).to.equal(0);
    await expectAccessible(page, 'notices');
    await saveScreenshot(page, 'notices');

    await page
      .getByRole('button', {
        name: 'Mark read: Scheduler 7 failed: Nightly export',
      })
      .click();
    await page.getByText('1 unread', {exact: true}).waitFor();
    expect(await textOf(link.locator('.badge'))).to.equal('1');
    await page.getByRole('button', {name: 'Mark all read'}).click();
    await page.getByText('0 unread', {exact: true}).waitFor();
    expect(await link.locator('.badge').count()).to.equal(0);
    const [{unread}] = await sql<{unread: number}>(
      `SELECT count(*)::int AS unread FROM notification WHERE read_at IS NULL`,
    );
    expect(unread).to.equal(1); // the operator's, untouched

    await signIn(page, viewer.email);
    await page.getByRole('link', {name: 'Calendars', exact: true}).click();
    await page.getByRole('heading', {name: 'Calendars'}).waitFor();
    expect(
      await page.getByRole('link', {name: 'New calendar'}).count(),
    ).to.equal(0);
    expect(pageErrors).to.deepEqual([]);
  });
});
