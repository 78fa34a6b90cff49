import {expect} from '@loopback/testlab';
import {readFileSync} from 'node:fs';
import path from 'node:path';
import {gzipSync} from 'node:zlib';
import {CONSOLE_DIR} from '../../application';
import {givenRunningApp, TestApp} from '../fixtures/test-app';

const INITIAL_JS_GZIP_BUDGET = 300 * 1024;

function indexHtml(): string {
  return readFileSync(path.join(CONSOLE_DIR, 'index.html'), 'utf8');
}

describe('the operations console is served at /', () => {
  let given: TestApp;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());

  it('serves the app at / and at deep links, never cached', async () => {
    for (const url of ['/', '/schedulers', '/schedulers/12', '/audit']) {
      const res = await given.client.get(url).expect(200);
      expect(res.headers['content-type']).to.match(/^text\/html/);
      expect(res.text).to.match(/<app-root>/);
      expect(res.headers['cache-control']).to.equal('no-cache');
    }
  });

  it('caches hashed assets for a year', async () => {
    const [script] = /src="(main-[A-Z0-9]{8}\.js)"/.exec(indexHtml())!.slice(1);
    const res = await given.client.get(`/${script}`).expect(200);
    expect(res.headers['content-type']).to.match(/javascript/);
    expect(res.headers['cache-control']).to.equal(
      'public, max-age=31536000, immutable',
    );
  });

  it('keeps the JSON 404 for unknown API paths and missing files', async () => {
    for (const url of ['/api/no-such-thing', '/api', '/nope.js']) {
      const res = await given.client.get(url).expect(404);
      expect(res.headers['content-type']).to.match(/application\/json/);
      expect(res.body.error).to.containDeep({
        statusCode: 404,
        name: 'NotFoundError',
      });
    }
    await given.client.post('/schedulers').expect(404);
  });

  it('keeps the API explorer and sends the strict CSP with the console', async () => {
    await given.client.get('/api/explorer/').expect(200);
    const res = await given.client.get('/schedulers/3').expect(200);
    const csp = res.headers['content-security-policy'];
    expect(csp).to.match(/script-src 'self'(;|$)/);
    expect(csp).to.match(/style-src 'self'(;|$)/);
    expect(csp).to.match(/script-src-attr 'none'/);
  });

  it('has no inline script, inline style or inline event handler in index.html', () => {
    const html = indexHtml();
    expect(html).to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).to.not.match(/<style/);
    expect(html).to.not.match(/\son[a-z]+=/);
  });

  it('keeps the initial JavaScript within 300 kB compressed', () => {
    const html = indexHtml();
    const initial = [...html.matchAll(/(?:src|href)="([^"]+\.js)"/g)].map(
      match => match[1],
    );
    expect(initial.length).to.be.above(0);
    const gzipped = initial
      .map(file => gzipSync(readFileSync(path.join(CONSOLE_DIR, file))).length)
      .reduce((sum, size) => sum + size, 0);
    expect(gzipped).to.be.below(INITIAL_JS_GZIP_BUDGET);
  });
});
