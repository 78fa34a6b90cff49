import {expect} from '@loopback/testlab';
import {spawn} from 'node:child_process';
import {once} from 'node:events';
import {createServer, connect} from 'node:net';
import {readdirSync} from 'node:fs';
import {getPriority} from 'node:os';
import path from 'node:path';
import {packagesLoadedBy} from '../fixtures/loaded-packages';
import {startService} from '../fixtures/service-process';
import {TEST_DATABASE_URL} from '../fixtures/test-database';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const {port} = server.address() as {port: number};
  await new Promise(resolve => server.close(resolve));
  return port;
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise(resolve => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('service process', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  const roles: Array<[string, string[]]> = [
    ['api', []],
    ['scheduler', ['cron-scheduler started']],
    ['worker', ['cron-worker started']],
    ['stay-alive', ['stay-alive supervisor started']],
    [
      'all',
      [
        'cron-scheduler started',
        'cron-worker started',
        'stay-alive supervisor started',
      ],
    ],
  ];
  for (const [mode, announcements] of roles) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      it(`APP_MODE=${mode} boots, announces its roles and exits 0 on ${signal}`, async () => {
        const service = startService({APP_MODE: mode});
        const started = await service.waitForLog('Service started');
        expect(started).to.containDeep({mode, level: 'info'});
        for (const announcement of announcements) {
          await service.waitForLog(announcement);
        }
        // A role runs until it is told to stop; it must not exit by itself.
        await new Promise(resolve => setTimeout(resolve, 300));
        expect(service.child.exitCode).to.be.null();
        service.child.kill(signal);
        const {code} = await service.exited();
        expect(code).to.equal(0);
        const records = service.records();
        expect(
          records.find(r => r.msg === 'Shutdown requested'),
        ).to.containDeep({
          level: 'warn',
          signal,
        });
        expect(records.find(r => r.msg === 'Shutdown complete')).to.containDeep(
          {level: 'info'},
        );
        for (const announcement of announcements) {
          const role = announcement.replace(' started', '');
          expect(records.map(r => r.msg)).to.containEql(`${role} stopped`);
        }
        expect(service.stderr).to.deepEqual([]);
      });
    }
  }

  it('npm run start:stay-alive (as a container runs it) passes SIGTERM on, and the service exits 0', async () => {
    const npm = spawn('npm', ['run', '--silent', 'start:stay-alive'], {
      cwd: path.resolve(__dirname, '../../..'),
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: TEST_DATABASE_URL,
        NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    npm.stdout!.on('data', chunk => lines.push(...String(chunk).split('\n')));
    const exited = once(npm, 'exit');
    const deadline = Date.now() + 15_000;
    while (!lines.some(line => line.includes('"Service started"'))) {
      if (Date.now() > deadline || npm.exitCode !== null) {
        throw new Error(`service did not start: ${lines.join('\n')}`);
      }
      await new Promise(resolve => setTimeout(resolve, 50));
    }
    const servicePid = JSON.parse(
      lines.find(line => line.includes('"Service started"'))!,
    ).pid;
    npm.kill('SIGTERM');
    const [code] = await exited;
    expect(code).to.equal(0);
    expect(
      lines.some(line => line.includes('"Shutdown complete"')),
    ).to.be.true();
    // The service itself ended, not just npm.
    expect(() => process.kill(servicePid, 0)).to.throw(/ESRCH/);
  });

  it('APP_MODE=scheduler never opens the HTTP port', async () => {
    const port = await freePort();
    const service = startService({APP_MODE: 'scheduler', PORT: String(port)});
    const started = await service.waitForLog('Service started');
    expect(started).to.not.have.property('url');
    expect(await refusesConnections(port)).to.be.true();
    service.child.kill('SIGTERM');
    expect((await service.exited()).code).to.equal(0);
  });

  it('APP_MODE=api serves HTTP on PORT', async () => {
    const port = await freePort();
    const service = startService({APP_MODE: 'api', PORT: String(port)});
    const started = await service.waitForLog('Service started');
    expect(started.url).to.equal(`http://127.0.0.1:${port}/api`);
    const res = await fetch(`http://127.0.0.1:${port}/api/openapi.json`);
    expect(res.status).to.equal(200);
    service.child.kill('SIGTERM');
    expect((await service.exited()).code).to.equal(0);
  });

  it('checks the settings before it loads the application: a wrong one stops it with no LoopBack package loaded', async () => {
    const packages = await packagesLoadedBy(async env => {
      const service = startService({CRON_MAX_RETRIES: 'abc', ...env});
      expect((await service.exited()).code).to.equal(1);
      expect(service.stderr).to.have.length(1);
    });
    expect(packages).to.not.be.empty();
    expect(packages.filter(name => name.startsWith('@loopback/'))).to.deepEqual(
      [],
    );
  });

  it('PROCESS_NICE=7 runs the process at that priority and says so when it starts', async () => {
    const service = startService({APP_MODE: 'worker', PROCESS_NICE: '7'});
    const started = await service.waitForLog('Service started');
    expect(started.process_nice).to.equal(7);
    // Every thread, as the system sees it: Linux keeps one value per thread,
    // and the runtime's helpers (garbage collection) started before our code.
    const threads = readdirSync(`/proc/${service.child.pid}/task`);
    expect(threads.length).to.be.above(1);
    expect(threads.map(tid => getPriority(Number(tid)))).to.deepEqual(
      threads.map(() => 7),
    );
    service.child.kill('SIGTERM');
    expect((await service.exited()).code).to.equal(0);
  });

  it('PROCESS_NICE=-5 without CAP_SYS_NICE stops at start with exit 1 and one line saying what it needs', async () => {
    const service = startService(
      {APP_MODE: 'scheduler', PROCESS_NICE: '-5'},
      {withoutCapSysNice: true},
    );
    const {code} = await service.exited();
    expect(code).to.equal(1);
    expect(service.stdout).to.deepEqual([]);
    expect(service.stderr).to.have.length(1);
    const line = JSON.parse(service.stderr[0]);
    expect(line).to.containDeep({level: 'error', variable: 'PROCESS_NICE'});
    expect(line.msg).to.match(
      /^Invalid configuration: PROCESS_NICE \(-5\) cannot be applied: .*(EACCES|EPERM).*CAP_SYS_NICE/,
    );
  });

  it('PROCESS_NICE=-0 runs at 0 (Node aborts on a negative zero)', async () => {
    const service = startService({APP_MODE: 'worker', PROCESS_NICE: '-0'});
    const started = await service.waitForLog('Service started');
    expect(started.process_nice).to.equal(0);
    service.child.kill('SIGTERM');
    expect((await service.exited()).code).to.equal(0);
  });

  it('PROCESS_NICE=3 under `nice -n 5` without CAP_SYS_NICE is a raise: refused, saying so', async () => {
    const service = startService(
      {APP_MODE: 'worker', PROCESS_NICE: '3'},
      {withoutCapSysNice: true, niceAtStart: 5},
    );
    const {code} = await service.exited();
    expect(code).to.equal(1);
    expect(service.stderr).to.have.length(1);
    const line = JSON.parse(service.stderr[0]);
    expect(line).to.containDeep({level: 'error', variable: 'PROCESS_NICE'});
    expect(line.msg).to.match(
      /^Invalid configuration: PROCESS_NICE \(3\) cannot be applied: .*started at \(5\) needs CAP_SYS_NICE/,
    );
  });

  const badEnvironments: Array<[string, string]> = [
    ['CRON_MAX_RETRIES', 'abc'],
    ['CRON_RETRY_DELAY_MS', '-1000'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'postgres//missing-colon'],
    ['AMQP_URL', 'not a url'],
    ['HEALTH_PORT', '70000'],
    ['STAY_ALIVE_RECONCILE_MS', '120000'],
    ['STAY_ALIVE_RESTART_MAX_DELAY_MS', '10'],
    ['PROCESS_NICE', '20'],
    ['PROCESS_NICE', 'low'],
  ];
  for (const [variable, value] of badEnvironments) {
    it(`stops at start with exit 1 and one line naming ${variable}=${value}`, async () => {
      const service = startService({[variable]: value});
      const {code} = await service.exited();
      expect(code).to.equal(1);
      expect(service.stdout).to.deepEqual([]);
      expect(service.stderr).to.have.length(1);
      const line = JSON.parse(service.stderr[0]);
      expect(line).to.containDeep({level: 'error', variable});
      expect(line.msg).to.match(
        new RegExp(`^Invalid configuration: ${variable} `),
      );
    });
  }
});
