import {expect} from '@loopback/testlab';
import {execFile} from 'node:child_process';
import {readFileSync} from 'node:fs';
import {createServer} from 'node:net';
import path from 'node:path';
import {promisify} from 'node:util';
import {PROJECT_ROOT} from '../../config';
import {resetBroker} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';
import {TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';
import {ServiceProcess, startService} from '../fixtures/service-process';

const execFileAsync = promisify(execFile);
const README_BASE_URL = 'http://127.0.0.1:3000';

/** The shell blocks of one README section, in order. */
export function shellBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section "${heading}"`);
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map(([, code]) => code);
}

/** A free local port for the service (PORT=0 would hide it from the walk). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const {port} = server.address() as {port: number};
  await new Promise(resolve => server.close(resolve));
  return port;
}

const readme = readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');

/** The quick start's first command, whose admin the walk signs in as. */
function quickStartAdmin(): {email: string; password: string} {
  const [install] = shellBlocks(readme, 'Quick start');
  const match = /ADMIN_EMAIL=(\S+) ADMIN_PASSWORD=(\S+) npm start/.exec(
    install,
  );
  if (!match) throw new Error('Quick start does not set the first admin');
  return {email: match[1], password: match[2]};
}

describe('README: the first five minutes, run as written (issue 19)', () => {
  let service: ServiceProcess;
  let baseUrl: string;

  before(async () => {
    await truncateAll();
    await resetBroker();
    // The quick start's migrate step creates the admin the walk signs in as.
    const admin = quickStartAdmin();
    await execFileAsync(
      process.execPath,
      [path.join(PROJECT_ROOT, 'dist/migrate.js')],
      {
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: TEST_DATABASE_URL,
          ADMIN_EMAIL: admin.email,
          ADMIN_PASSWORD: admin.password,
        },
      },
    );
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    // Every role, as npm start runs them; the test retry delays (200 ms
    // doubling, 3 retries) stand in for the README's 30 s, 60 s and 120 s.
    service = startService(
      {APP_MODE: 'all', PORT: String(port)},
      {ownProcessGroup: true},
    );
    await service.waitForLog('Consuming tasks', 30_000);
  });

  after(async () => {
    if (service.child.exitCode === null && service.child.signalCode === null) {
      process.kill(-service.child.pid!, 'SIGTERM');
      await service.exited();
    }
  });

  it('has the walk: sign in, schedule, run, fail, re-drive', () => {
    const walk = shellBlocks(readme, 'The first five minutes').join('\n');
    for (const step of [
      '/api/auth/login',
      '/api/workers',
      '/api/schedulers',
      '/executions',
      '/api/failed-tasks',
      '/redrive',
    ]) {
      expect(walk).to.containEql(step);
    }
  });

  it('runs every command of the walk and of the sections after it against a running service, each answered 2xx', async () => {
    const walk = [
      'The first five minutes',
      'Calendars, windows and notices',
      'HTTP targets, webhooks and API keys',
    ]
      .flatMap(heading => shellBlocks(readme, heading))
      .join('\n')
      .split(README_BASE_URL)
      .join(baseUrl);
    const script = [
      'set -euo pipefail',
      // A 4xx or 5xx answer fails the walk instead of printing an error body.
      'curl() { command curl --fail-with-body --max-time 20 "$@"; }',
      walk,
      'printf "\\nWALK %s %s %s %s %s %s\\n" "$TOKEN" "$OK" "$BAD" "$FAILED" "$CAL" "$WINTER"',
    ].join('\n');
    const {stdout} = await execFileAsync('bash', ['-c', script], {
      cwd: PROJECT_ROOT,
      timeout: 150_000,
      env: {PATH: process.env.PATH},
    });
    const [token, ok, bad, failed, calendar, winter] =
      /^WALK (\S+) (\d+) (\d+) (\d+) (\d+) (\d+)$/m.exec(stdout)!.slice(1);

    const api = async (url: string) => {
      const res = await fetch(`${baseUrl}/api${url}`, {
        headers: {Authorization: `Bearer ${token}`},
      });
      expect(res.status).to.equal(200);
      return res.json() as Promise<Array<Record<string, unknown>>>;
    };
    // The run now of the healthy scheduler succeeded.
    await eventually(
      async () =>
        (await api(`/schedulers/${ok}/executions?trigger=manual`)).some(
          execution => execution.status === 'succeeded',
        ) || undefined,
      20_000,
      'the healthy run to succeed',
    );
    // The failing one went through its retries into the failed tasks, was
    // re-driven once, and the re-driven run succeeded.
    const failedTask = (await api(`/failed-tasks/${failed}`)) as unknown as {
      scheduler_id: number;
      redrive_count: number;
    };
    expect(failedTask).to.containDeep({
      scheduler_id: Number(bad),
      redrive_count: 1,
    });
    // The calendars section: the winter scheduler skips the calendar's fires.
    expect(await api(`/schedulers/${winter}`)).to.containDeep({
      calendar_ids: [Number(calendar)],
      starts_at: '2026-12-01T00:00:00.000Z',
    });
    // The API-key section: the operator's key paused the first scheduler.
    expect(await api(`/schedulers/${ok}`)).to.containDeep({status: false});
    await eventually(
      async () =>
        (await api(`/schedulers/${bad}/executions?trigger=redrive`)).some(
          execution => execution.status === 'succeeded',
        ) || undefined,
      20_000,
      'the re-driven run to succeed',
    );
  }).timeout(150_000);
});
