import {expect} from '@loopback/testlab';
import type {Page} from 'playwright-core';
import {
  expectAccessible,
  givenBrowser,
  saveScreenshot,
  TestBrowser,
} from '../fixtures/browser';
import {asUser, givenUser, TEST_PASSWORD, TestUser} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {resetBroker} from '../fixtures/test-broker';
import {
  givenConsumer,
  givenWorkersDir,
  TestConsumer,
} from '../fixtures/test-consumer';
import {sql, truncateAll} from '../fixtures/test-database';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

/** Waits for a condition of the database, as the views wait for polls. */
async function eventually<T>(
  read: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise(resolve => setTimeout(resolve, 200));
  }
}

describe('operations console in Chromium', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let given: TestApp;
  let consumer: TestConsumer;
  let browser: TestBrowser;
  let operator: TestUser;
  let viewer: TestUser;
  let base: string;
  let page: Page;
  let okWorkerId: number;
  let flakyWorkerId: number;
  const cspViolations: string[] = [];

  before(async () => {
    await truncateAll();
    await resetBroker();
    const workersDir = givenWorkersDir({
      'ok-worker': '#!/bin/sh\necho "done: $*"\n',
      // Fails until it is given mode=fixed (what the operator edits in).
      'flaky-worker':
        '#!/bin/sh\ncase " $* " in *" mode=fixed "*) echo fixed; exit 0;; esac\necho "broken on purpose" >&2\nexit 3\n',
    });
    given = await givenRunningApp({workersDir});
    consumer = await givenConsumer({workersDir});
    // restServer.url ends with the API's base path; the console is at the root.
    base = new URL(given.app.restServer.url!).origin;
    operator = await givenUser(given.app, 'operator', {
      email: 'operator@example.com',
    });
    viewer = await givenUser(given.app, 'viewer', {
      email: 'viewer@example.com',
    });
    [{id: okWorkerId}, {id: flakyWorkerId}] = await sql<{id: number}>(
      `INSERT INTO worker (name, command) VALUES ('Nightly export', 'ok-worker'), ('Flaky import', 'flaky-worker') RETURNING id`,
    );
    browser = await givenBrowser('Europe/Berlin');
    browser.context.setDefaultTimeout(10_000);
    page = await browser.context.newPage();
    page.on('pageerror', error =>
      cspViolations.push(`page error: ${error.message}`),
    );
    page.on('response', response => {
      // A 5xx is never expected; its URL helps when a test then times out.
      if (response.status() >= 500)
        process.stderr.write(`[http] ${response.status()} ${response.url()}\n`);
    });
    page.on('console', message => {
      if (/Content.Security.Policy/i.test(message.text())) {
        cspViolations.push(message.text());
      }
    });
  });
  after(async () => {
    await browser?.close();
    await consumer?.stop();
    await given?.app.stop();
  });

  async function signIn(on: Page, email: string): Promise<void> {
    await on.goto(`${base}/schedulers`);
    await on.getByRole('heading', {name: 'Sign in'}).waitFor();
    await on.getByLabel('Email').fill(email);
    await on.getByLabel('Password').fill(TEST_PASSWORD);
    await on.getByRole('button', {name: 'Sign in'}).click();
    await on.getByRole('heading', {name: 'Schedulers'}).waitFor();
  }

  it('signs in, shows the navigation, and reloads into the same session', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('heading', {name: 'Sign in'}).waitFor();
    await expectAccessible(page, 'sign in');
    await saveScreenshot(page, 'sign-in');
    await page.getByLabel('Email').fill(operator.email);
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', {name: 'Sign in'}).click();
    await page.getByText('Invalid email or password').waitFor();
    await signIn(page, operator.email);
    for (const name of ['Schedulers', 'Failed tasks', 'System', 'Audit']) {
      await page.getByRole('link', {name, exact: true}).waitFor();
    }
    expect(
      await page.getByRole('link', {name: 'API explorer'}).getAttribute('href'),
    ).to.equal('/api/explorer/');
    await page.reload();
    await page.getByRole('heading', {name: 'Schedulers'}).waitFor();
  });

  it('creates a scheduler in the editor: words and next runs while typing, the 422 beside the field', async () => {
    await page.getByRole('link', {name: 'New scheduler'}).click();
    await page.getByRole('heading', {name: 'New scheduler'}).waitFor();
    await page.getByLabel('Description').fill('Nightly export');
    await page.getByLabel('Schedule', {exact: true}).fill('61 * * * *');
    const scheduleError = page.locator('#schedule-error');
    expect(await waitForText(scheduleError)).to.match(/minute|61/i);
    await page.getByLabel('Schedule', {exact: true}).fill('30 6 * * *');
    await page.getByText('At 06:30 AM').waitFor();
    expect(await page.locator('.next-runs li').count()).to.equal(5);
    expect(await page.locator('.next-runs li').first().innerText()).to.match(
      /Europe\/Berlin/,
    );
    await page.getByLabel('Task').selectOption(`worker:${okWorkerId}`);
    await page.getByLabel('Parameters').fill('{"batch": ');
    await page.locator('#params-error').getByText('Not valid JSON').waitFor();
    await page.getByLabel('Parameters').fill('{"batch": 5}');
    await expectAccessible(page, 'editor');
    await saveScreenshot(page, 'scheduler-editor');
    await page
      .getByLabel('Reason for the audit log (optional)')
      .fill('export for finance');
    await page.getByRole('button', {name: 'Save'}).click();
    await page.getByRole('heading', {name: 'Nightly export'}).waitFor();
    expect(
      await sql(
        `SELECT action, reason FROM audit_event WHERE entity = 'scheduler'`,
      ),
    ).to.deepEqual([{action: 'create', reason: 'export for finance'}]);
    const [row] = await sql(
      `SELECT schedule, timezone, worker_id, params FROM scheduler`,
    );
    expect(row).to.deepEqual({
      schedule: '30 6 * * *',
      timezone: 'Europe/Berlin',
      worker_id: okWorkerId,
      params: {batch: 5},
    });
  });

  it('runs a scheduler now and shows the run succeed in the detail view', async () => {
    await page.getByLabel('Reason (optional)').fill('check after deploy');
    await page.getByRole('button', {name: 'Run now'}).click();
    await page.getByText(/Run #\d+ started/).waitFor();
    const runs = page.locator('section[aria-labelledby="runs-heading"] tbody');
    await runs
      .locator('tr', {hasText: 'manual'})
      .locator('.status-succeeded')
      .waitFor({timeout: 20_000});
    expect(
      await page.locator('section[aria-labelledby="next-heading"] li').count(),
    ).to.equal(10);
    await page.locator('svg.chart rect').first().waitFor();
    await expectAccessible(page, 'scheduler detail');
    await saveScreenshot(page, 'scheduler-detail');
  });

  it('backfills after a dry-run preview', async () => {
    const berlin = (msAgo: number) =>
      new Date(Date.now() - msAgo)
        .toLocaleString('sv-SE', {timeZone: 'Europe/Berlin'})
        .slice(0, 16)
        .replace(' ', 'T');
    // 3 days less a minute, both ends included: exactly three 06:30s.
    await page.getByLabel('From').fill(berlin(3 * 24 * 3600_000 - 60_000));
    await page.getByLabel('To').fill(berlin(0));
    await page.getByRole('button', {name: 'Preview backfill'}).click();
    await page.getByText(/Dry run: 3 slot\(s\)/).waitFor();
    expect(
      await sql(`SELECT 1 FROM scheduler_execution WHERE trigger = 'backfill'`),
    ).to.have.length(0);
    await page
      .getByRole('button', {name: /Confirm backfill of 3 slot/})
      .click();
    await page.getByText('Backfill: 3 claimed, 0 had already run').waitFor();
    expect(
      await sql(`SELECT 1 FROM scheduler_execution WHERE trigger = 'backfill'`),
    ).to.have.length(3);
  });

  it('pauses and resumes with a reason, and the audit view shows both', async () => {
    await page.getByRole('link', {name: 'Schedulers', exact: true}).click();
    await page.getByRole('heading', {name: 'Schedulers'}).waitFor();
    await page.getByText('At 06:30 AM').waitFor();
    await expectAccessible(page, 'schedulers');
    await saveScreenshot(page, 'schedulers');
    await page.getByLabel('Reason (optional)').fill('maintenance window');
    await page.getByRole('button', {name: 'Pause: Nightly export'}).click();
    await page.getByText('“Nightly export” paused.').waitFor();
    await page.locator('td .state-paused').waitFor();
    await page.getByRole('button', {name: 'Resume: Nightly export'}).click();
    await page.getByText('“Nightly export” resumed.').waitFor();
    await page.getByRole('link', {name: 'Audit', exact: true}).click();
    await page.getByRole('heading', {name: 'Audit'}).waitFor();
    await page.getByLabel('Reason contains').fill('maintenance');
    await page.getByRole('button', {name: 'Filter'}).click();
    const rows = page.locator('tbody tr', {hasText: 'maintenance window'});
    expect(await eventuallyCount(rows, 2)).to.equal(2);
    expect(await rows.allInnerTexts()).to.matchAny(/pause|update/);
    // The operator's own events say so; operators may not read other users.
    expect(await rows.allInnerTexts()).to.matchEach(/\byou\b/);
    await expectAccessible(page, 'audit');
    await saveScreenshot(page, 'audit');
  });

  it('names who acted by e-mail for an admin, who may read the users', async () => {
    await givenUser(given.app, 'admin', {email: 'audit-admin@example.com'});
    const adminPage = await browser.context.newPage();
    try {
      await signIn(adminPage, 'audit-admin@example.com');
      await adminPage.getByRole('link', {name: 'Audit', exact: true}).click();
      await adminPage.getByLabel('Reason contains').fill('maintenance');
      await adminPage.getByRole('button', {name: 'Filter'}).click();
      await adminPage
        .locator('tbody tr', {
          hasText: `operator@example.com (#${operator.id})`,
        })
        .first()
        .waitFor();
    } finally {
      await adminPage.close();
    }
  });

  it('re-drives a task that failed for good with edited params from Failed tasks', async () => {
    const {body} = await asUser(given.client, operator)
      .post('/api/schedulers')
      .send({
        description: 'Flaky import',
        schedule: '0 3 * * *',
        worker_id: flakyWorkerId,
        params: {mode: 'broken'},
      })
      .expect(201);
    await asUser(given.client, operator)
      .post(`/api/schedulers/${body.id}/run`)
      .send({})
      .expect(202);
    const failedId = await eventually(async () => {
      const [row] = await sql<{id: string}>(`SELECT id FROM failed_task`);
      return row ? Number(row.id) : undefined;
    });
    await page.getByRole('link', {name: 'Failed tasks', exact: true}).click();
    await page.getByRole('heading', {name: 'Failed tasks'}).waitFor();
    await page.getByText('"mode":"broken"').waitFor();
    await expectAccessible(page, 'failed tasks');
    await saveScreenshot(page, 'failed-tasks');
    await page
      .getByRole('button', {name: `Re-drive failed task ${failedId}`})
      .click();
    await page.getByLabel('Parameters').fill('{"mode": "fixed"}');
    await page.getByRole('button', {name: 'Confirm re-drive'}).click();
    await page.getByText(`Failed task #${failedId} re-driven`).waitFor();
    const run = await eventually(async () => {
      const [row] = await sql<{status: string; payload: unknown}>(
        `SELECT status, payload FROM scheduler_execution
          WHERE trigger = 'redrive' AND status IN ('succeeded', 'failed')`,
      );
      return row;
    });
    expect(run.status).to.equal('succeeded');
    await page.goto(`${base}/schedulers/${body.id}`);
    await page
      .locator('tr', {hasText: 'redrive'})
      .locator('.status-succeeded')
      .waitFor({timeout: 20_000});
  });

  it('shows the system: producer, queues with consumers, readiness', async () => {
    await page.getByRole('link', {name: 'System', exact: true}).click();
    await page.getByRole('heading', {name: 'System'}).waitFor();
    const taskQueue = page.locator('tr', {
      has: page.locator('code', {hasText: /^cron_scheduler$/}),
    });
    await taskQueue.waitFor();
    expect(await taskQueue.locator('td').nth(2).innerText()).to.equal('1');
    expect(
      await page.getByText('No consumer is attached to cron_scheduler').count(),
    ).to.equal(0);
    await page
      .locator('li', {hasText: 'postgres'})
      .locator('.status-succeeded', {hasText: 'up'})
      .waitFor();
    await page.getByText(/Last 24 hours: [1-9]\d* succeeded/).waitFor();
    expect(
      await page
        .locator('section[aria-labelledby="runs-per-hour-heading"] rect')
        .count(),
    ).to.be.above(0);
    await expectAccessible(page, 'system');
    await saveScreenshot(page, 'system');
  });

  it('fits a 390x844 phone screen without a page-wide horizontal scroll', async () => {
    await page.setViewportSize({width: 390, height: 844});
    await page.getByRole('link', {name: 'Schedulers', exact: true}).click();
    await page.getByText('At 06:30 AM').waitFor();
    const width = (await page.evaluate(
      'document.documentElement.scrollWidth',
    )) as number;
    expect(width).to.be.belowOrEqual(390);
    await saveScreenshot(page, 'schedulers-phone');
    await page.setViewportSize({width: 1280, height: 800});
  });

  it('shows a viewer no write controls', async () => {
    const viewerPage = await browser.context.newPage();
    // Signed out, a deep link leads through sign-in back to its view.
    await viewerPage.goto(`${base}/failed-tasks`);
    await viewerPage.getByRole('heading', {name: 'Sign in'}).waitFor();
    await viewerPage.getByLabel('Email').fill(viewer.email);
    await viewerPage.getByLabel('Password').fill(TEST_PASSWORD);
    await viewerPage.getByRole('button', {name: 'Sign in'}).click();
    await viewerPage.getByRole('heading', {name: 'Failed tasks'}).waitFor();
    // The audit log is for operators and admins: no link to a 403.
    expect(
      await viewerPage.getByRole('link', {name: 'Audit', exact: true}).count(),
    ).to.equal(0);
    // The editor by URL sends a viewer back to the list.
    await viewerPage.goto(`${base}/schedulers/new`);
    await viewerPage.getByRole('heading', {name: 'Schedulers'}).waitFor();
    expect(viewerPage.url()).to.match(/\/schedulers$/);
    await viewerPage.getByText('At 06:30 AM').waitFor();
    const writes = /^(Run now|Pause|Resume|New scheduler|Re-drive|Edit|Save)/;
    expect(
      await viewerPage.getByRole('button', {name: writes}).count(),
    ).to.equal(0);
    expect(
      await viewerPage.getByRole('link', {name: 'New scheduler'}).count(),
    ).to.equal(0);
    await viewerPage.getByRole('link', {name: 'Nightly export'}).click();
    await viewerPage.getByRole('heading', {name: 'Nightly export'}).waitFor();
    expect(
      await viewerPage.getByRole('button', {name: writes}).count(),
    ).to.equal(0);
    await viewerPage
      .getByRole('link', {name: 'Failed tasks', exact: true})
      .click();
    await viewerPage.getByRole('heading', {name: 'Failed tasks'}).waitFor();
    await viewerPage.getByText('"mode":"broken"').waitFor();
    expect(
      await viewerPage.getByRole('button', {name: writes}).count(),
    ).to.equal(0);
    await viewerPage.close();
  });

  it('sends a revoked session back to sign in with a message', async () => {
    await page.goto(`${base}/schedulers`);
    await page.getByRole('heading', {name: 'Schedulers'}).waitFor();
    await asUser(given.client, operator)
      .post('/api/auth/logout-all')
      .expect(204);
    await page
      .getByRole('heading', {name: 'Sign in'})
      .waitFor({timeout: 15_000});
    await page
      .getByText('Your session has expired or was signed out')
      .waitFor();
    expect(await page.evaluate('sessionStorage.length')).to.equal(0);
  });

  it('never tripped the Content-Security-Policy', () => {
    expect(cspViolations).to.deepEqual([]);
  });
});

async function waitForText(locator: import('playwright-core').Locator) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = (await locator.innerText()).trim();
    if (text) return text;
    if (Date.now() > deadline) return '';
    await new Promise(resolve => setTimeout(resolve, 100));
  }
}

async function eventuallyCount(
  locator: import('playwright-core').Locator,
  expected: number,
) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const count = await locator.count();
    if (count >= expected || Date.now() > deadline) return count;
    await new Promise(resolve => setTimeout(resolve, 100));
  }
}
