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
import {sql, truncateAll} from '../fixtures/test-database';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

const CREDENTIAL = 'Bearer console-typed-credential';

describe('console: HTTP targets, webhooks and API keys in Chromium (issue 27)', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let given: TestApp;
  let browser: TestBrowser;
  let operator: TestUser;
  let viewer: TestUser;
  let base: string;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    await truncateAll();
    given = await givenRunningApp();
    base = new URL(given.app.restServer.url!).origin;
    operator = await givenUser(given.app, 'operator', {
      email: 'integrator@example.com',
    });
    viewer = await givenUser(given.app, 'viewer', {
      email: 'watcher@example.com',
    });
    browser = await givenBrowser('Europe/Berlin');
    browser.context.setDefaultTimeout(10_000);
    page = await browser.context.newPage();
    page.on('pageerror', error => pageErrors.push(error.message));
    page.on('console', message => {
      if (/Content.Security.Policy/i.test(message.text())) {
        pageErrors.push(message.text());
      }
    });
  });
  after(async () => {
    await browser?.close();
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

  /** The secret in the show-once field, then dismissed: gone from the page. */
  async function takeSecret(label: string): Promise<string> {
    const field = page.getByRole('textbox', {name: label, exact: true});
    await field.waitFor();
    const secret = await field.inputValue();
    await page.getByRole('button', {name: 'I have stored it'}).click();
    await field.waitFor({state: 'detached'});
    return secret;
  }

  it('creates an HTTP target showing its secret once, keeps the credential write-only, rotates and deletes it', async () => {
    await signIn(page, operator.email);
    await page.getByRole('link', {name: 'HTTP targets'}).click();
    await page.getByRole('heading', {name: 'HTTP targets', level: 1}).waitFor();
    await page.getByLabel('Name').fill('Nightly sync');
    await page.getByLabel('URL').fill('https://hooks.example.com/sync');
    await page.getByLabel(/Authorization header/).fill(CREDENTIAL);
    await page.getByRole('button', {name: 'Create target'}).click();
    const secret = await takeSecret('Signing secret');
    expect(secret).to.match(/^whsec_/);
    const row = page.getByRole('row', {name: /Nightly sync/});
    await row.getByText('Authorization').waitFor();
    await expectAccessible(page, 'HTTP targets');
    await saveScreenshot(page, 'http-targets');
    await page.reload();
    await row.waitFor();
    const text = await page.content();
    expect(text).to.not.containEql(CREDENTIAL);
    expect(text).to.not.containEql(secret);
    // Edit: the form takes the target's values; an empty credential keeps it.
    await page
      .getByRole('button', {name: 'Edit HTTP target Nightly sync'})
      .click();
    await page.getByRole('heading', {name: /Edit HTTP target #\d+/}).waitFor();
    expect(await page.getByLabel('URL').inputValue()).to.equal(
      'https://hooks.example.com/sync',
    );
    await page.getByLabel('URL').fill('https://hooks.example.com/sync-v2');
    await page.getByLabel('Timeout (ms)').fill('5000');
    await page.getByRole('button', {name: 'Save changes'}).click();
    await page.getByText('HTTP target "Nightly sync" saved.').waitFor();
    expect(
      await sql(
        `SELECT url, timeout_ms, secret_headers->>'Authorization' AS auth FROM http_target`,
      ),
    ).to.deepEqual([
      {
        url: 'https://hooks.example.com/sync-v2',
        timeout_ms: 5000,
        auth: CREDENTIAL,
      },
    ]);
    await page
      .getByRole('button', {
        name: 'Rotate secret of HTTP target Nightly sync',
      })
      .click();
    const rotated = await takeSecret('Signing secret');
    expect(rotated).to.match(/^whsec_/);
    expect(rotated).to.not.equal(secret);
    await page
      .getByRole('button', {name: 'Delete HTTP target Nightly sync'})
      .click();
    await page.getByText('No HTTP targets.').waitFor();
  });

  it('creates a webhook showing its secret once, pings it, shows the delivery log, rotates and deletes it', async () => {
    await page.getByRole('link', {name: 'Webhooks'}).click();
    await page.getByRole('heading', {name: 'Webhooks', level: 1}).waitFor();
    await page.getByLabel('URL').fill('https://hooks.example.com/events');
    await page.getByLabel('run.parked').check();
    await page.getByRole('button', {name: 'Create webhook'}).click();
    const secret = await takeSecret('Signing secret');
    expect(secret).to.match(/^whsec_/);
    const [{id}] = await sql<{id: number}>(`SELECT id FROM webhook`);
    await page.getByRole('row', {name: /run\.failed, run\.parked/}).waitFor();
    // A delivery the guard refused, as the consumer would have logged it.
    await sql(
      `INSERT INTO webhook_delivery (webhook_id, event, message_id, payload, status, attempts, error)
       VALUES ($1, 'run.failed', 'msg_refused', '{}', 'failed', 4,
               'SSRF guard: 10.0.0.5 is a private address; OUTBOUND_ALLOW does not open it')`,
      [id],
    );
    await page
      .getByRole('button', {name: `Test webhook ${id} with a ping`})
      .click();
    await page
      .getByRole('heading', {name: `Deliveries of webhook #${id}`})
      .waitFor();
    await page.getByRole('cell', {name: 'ping', exact: true}).waitFor();
    await page.getByRole('cell', {name: 'pending', exact: true}).waitFor();
    await page
      .getByText(/SSRF guard: 10\.0\.0\.5 is a private address/)
      .waitFor();
    await expectAccessible(page, 'webhooks');
    await saveScreenshot(page, 'webhooks');
    await page.getByRole('button', {name: `Edit webhook ${id}`}).click();
    await page.getByRole('heading', {name: `Edit webhook #${id}`}).waitFor();
    await page.getByLabel('run.failed').uncheck();
    await page.getByLabel('notice.failure').check();
    await page.getByRole('button', {name: 'Save changes'}).click();
    await page.getByText(`Webhook #${id} saved.`).waitFor();
    expect(await sql(`SELECT events FROM webhook`)).to.deepEqual([
      {events: ['run.parked', 'notice.failure']},
    ]);
    await page
      .getByRole('button', {name: `Rotate secret of webhook ${id}`})
      .click();
    expect(await takeSecret('Signing secret')).to.not.equal(secret);
    expect(await page.content()).to.not.containEql(secret);
    await page.getByRole('button', {name: `Delete webhook ${id}`}).click();
    await page.getByText('No webhooks.').waitFor();
  });

  it('creates an API key shown once that then works, and revokes it', async () => {
    await page.getByRole('link', {name: 'API keys'}).click();
    await page.getByRole('heading', {name: 'API keys', level: 1}).waitFor();
    await page.getByLabel('Name').fill('deploy pipeline');
    await page.getByLabel('Role (no higher than yours)').selectOption('viewer');
    await page.getByRole('button', {name: 'Create key'}).click();
    const key = await takeSecret('New API key');
    expect(key).to.match(/^tsk_[A-Za-z0-9_-]{43}$/);
    await page.getByRole('cell', {name: `${key.slice(0, 8)}…`}).waitFor();
    await asUser(given.client, {token: key}).get('/api/schedulers').expect(200);
    await expectAccessible(page, 'API keys');
    await saveScreenshot(page, 'api-keys');
    expect(await page.content()).to.not.containEql(key);
    await page
      .getByRole('button', {name: 'Revoke API key deploy pipeline'})
      .click();
    await page.getByRole('cell', {name: 'revoked', exact: true}).waitFor();
    await asUser(given.client, {token: key}).get('/api/schedulers').expect(401);
  });

  it('offers a viewer no webhooks and no HTTP target writes', async () => {
    const viewerPage = await browser.context.newPage();
    await viewerPage.goto(`${base}/`);
    // The session is per tab: the viewer signs in on a page of its own.
    await signIn(viewerPage, viewer.email);
    await viewerPage.getByRole('link', {name: 'API keys'}).waitFor();
    expect(
      await viewerPage.getByRole('link', {name: 'Webhooks'}).count(),
    ).to.equal(0);
    await viewerPage.getByRole('link', {name: 'HTTP targets'}).click();
    await viewerPage.getByText('No HTTP targets.').waitFor();
    expect(
      await viewerPage.getByRole('button', {name: 'Create target'}).count(),
    ).to.equal(0);
    await viewerPage.close();
    expect(pageErrors).to.eql([]);
  });
});
