import {expect} from '@loopback/testlab';
import {execFile} from 'node:child_process';
import path from 'node:path';
import {ProducerBindings} from '../../keys';
import {HealthBindings} from '../../keys';
import {startService} from '../fixtures/service-process';
import {TEST_AMQP_URL} from '../fixtures/test-broker';
import {TEST_DATABASE_URL} from '../fixtures/test-database';
import {TaskSchedulerApplication} from '../../application';
import type {AppConfig} from '../../config';
import {LogCapture} from '../fixtures/log-capture';
import {givenRunningApp, givenTestConfig, TestApp} from '../fixtures/test-app';
import {closedPort, TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

type ErrorBody = {
  error: {statusCode: number; name: string; details?: unknown[]};
};

const amqpTarget = new URL(TEST_AMQP_URL);
const pgTarget = new URL(TEST_DATABASE_URL);

describe('health endpoints', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  const apps: TestApp[] = [];
  const proxies: TcpProxy[] = [];
  async function app(
    overrides = {},
    beforeStart?: Parameters<typeof givenRunningApp>[1],
  ) {
    const created = await givenRunningApp(overrides, beforeStart);
    apps.push(created);
    return created;
  }
  async function proxyTo(url: URL, defaultPort: number) {
    const proxy = new TcpProxy(url.hostname, Number(url.port || defaultPort));
    proxies.push(proxy);
    return {proxy, port: await proxy.start()};
  }
  const background: TaskSchedulerApplication[] = [];
  /** An app of a mode without the API: no HTTP client to create. */
  async function backgroundApp(
    overrides: Partial<AppConfig>,
    beforeStart?: (a: TaskSchedulerApplication) => void,
    logs = new LogCapture(),
  ) {
    const created = new TaskSchedulerApplication(
      givenTestConfig(overrides),
      logs.logger,
    );
    beforeStart?.(created);
    background.push(created);
    await created.start();
    return created;
  }
  afterEach(async () => {
    await Promise.all(background.splice(0).map(a => a.stop()));
    await Promise.all(apps.splice(0).map(a => a.app.stop()));
    await Promise.all(proxies.splice(0).map(p => p.close()));
  });

  describe('on the API', () => {
    it('GET /api/health answers 200 without a token and asks no dependency', async () => {
      const {client} = await app({
        databaseUrl: viaPort(TEST_DATABASE_URL, await closedPort()),
        amqpUrl: viaPort(TEST_AMQP_URL, await closedPort()),
      });
      const res = await client.get('/api/health').expect(200);
      expect(res.body.status).to.equal('ok');
      expect(new Date(res.body.time).getTime()).to.be.a.Number();
    });

    it('GET /api/ready answers 200 with each check when PostgreSQL and RabbitMQ answer', async () => {
      const {client} = await app();
      const res = await client.get('/api/ready').expect(200);
      expect(res.body).to.deepEqual({
        status: 'ready',
        checks: {postgres: {status: 'up'}, rabbitmq: {status: 'up'}},
      });
    });

    it('GET /api/ready answers 503 naming RabbitMQ when the broker stops answering', async () => {
      const {proxy, port} = await proxyTo(amqpTarget, 5672);
      const {client, logs} = await app({
        amqpUrl: viaPort(TEST_AMQP_URL, port),
      });
      await client.get('/api/ready').expect(200);
      await proxy.close();
      const res = await client.get('/api/ready').expect(503);
      expect(res.body).to.deepEqual({
        error: {
          statusCode: 503,
          name: 'ServiceUnavailableError',
          message: 'Not ready: rabbitmq is not available',
          details: [
            {
              path: '/rabbitmq',
              code: 'unavailable',
              message: 'not available',
            },
          ],
        },
      });
      expect(logs.find('Readiness check failed')).to.containDeep([
        {
          level: 'warn',
          check: 'rabbitmq',
          reason: 'unreachable (ECONNREFUSED)',
        },
      ]);
      expect(
        logs.find('Request completed').map(r => r.status_code),
      ).to.containEql(503);
    });

    it('GET /api/ready answers 503 naming PostgreSQL when the database stops answering', async () => {
      const {proxy, port} = await proxyTo(pgTarget, 5432);
      const {client} = await app({
        databaseUrl: viaPort(TEST_DATABASE_URL, port),
      });
      await client.get('/api/ready').expect(200);
      await proxy.close();
      const res = await client.get('/api/ready').expect(503);
      expect(res.body.error.message).to.equal(
        'Not ready: postgres is not available',
      );
      expect(
        res.body.error.details.map((d: {path: string}) => d.path),
      ).to.deepEqual(['/postgres']);
    });

    it('names both when neither answers, and never shows the URLs or passwords', async () => {
      const {client} = await app({
        databaseUrl: viaPort(
          'postgres://postgres:pg-secret-pw@127.0.0.1/x',
          await closedPort(),
        ),
        amqpUrl: viaPort(
          'amqp://guest:amqp-secret-pw@127.0.0.1/',
          await closedPort(),
        ),
      });
      const res = await client.get('/api/ready').expect(503);
      expect(res.body.error.message).to.equal(
        'Not ready: postgres, rabbitmq are not available',
      );
      expect(res.text).to.not.match(/secret-pw/);
    });

    it('names what is down publicly and writes the dependency error text only to the log', async () => {
      const database = new URL(TEST_DATABASE_URL);
      database.pathname = '/no_such_database_for_ready';
      const broker = new URL(TEST_AMQP_URL);
      broker.pathname = '/no-such-vhost-for-ready';
      const {client, logs} = await app({
        databaseUrl: database.toString(),
        amqpUrl: broker.toString(),
      });
      const res = await client.get('/api/ready').expect(503);
      expect(res.body.error.details).to.deepEqual([
        {path: '/postgres', code: 'unavailable', message: 'not available'},
        {path: '/rabbitmq', code: 'unavailable', message: 'not available'},
      ]);
      expect(res.text).to.not.match(
        /no_such_database|no-such-vhost|Connection/,
      );
      const logged = logs.find('Readiness check failed');
      expect(logged.map(r => r.check).sort()).to.deepEqual([
        'postgres',
        'rabbitmq',
      ]);
      expect(JSON.stringify(logged)).to.match(/no_such_database_for_ready/);
    });

    it('is documented in OpenAPI without security requirements', async () => {
      const {client} = await app();
      const spec = (await client.get('/api/openapi.json').expect(200)).body;
      for (const route of ['/health', '/ready']) {
        const operation = spec.paths[route].get;
        expect(operation.tags).to.deepEqual(['Health']);
        expect(operation.security).to.deepEqual([]);
        expect(operation.responses).to.have.property('200');
      }
      expect(spec.paths['/ready'].get.responses).to.have.property('503');
    });
  });

  describe('on HEALTH_PORT in the background modes', () => {
    it('APP_MODE=worker serves /api/health and /api/ready on its own port, and nothing else', async () => {
      const service = startService({APP_MODE: 'worker', HEALTH_PORT: '0'});
      try {
        const started = await service.waitForLog('Service started');
        const base = `http://127.0.0.1:${started.health_port}/api`;
        expect((await fetch(`${base}/health`)).status).to.equal(200);
        const ready = await fetch(`${base}/ready`);
        expect(ready.status).to.equal(200);
        expect(await ready.json()).to.deepEqual({
          status: 'ready',
          checks: {
            postgres: {status: 'up'},
            rabbitmq: {status: 'up'},
            consumer: {status: 'up'},
          },
        });
        const missing = await fetch(`${base}/schedulers`);
        expect(missing.status).to.equal(404);
        expect(((await missing.json()) as ErrorBody).error.name).to.equal(
          'NotFoundError',
        );
        const post = await fetch(`${base}/ready`, {method: 'POST'});
        expect(post.status).to.equal(405);
        expect(post.headers.get('allow')).to.equal('GET, HEAD');
        expect(((await post.json()) as ErrorBody).error.statusCode).to.equal(
          405,
        );
      } finally {
        service.child.kill('SIGTERM');
        expect((await service.exited()).code).to.equal(0);
      }
    });

    it('APP_MODE=stay-alive is ready without asking RabbitMQ', async () => {
      const service = startService({
        APP_MODE: 'stay-alive',
        HEALTH_PORT: '0',
        AMQP_URL: viaPort(TEST_AMQP_URL, await closedPort()),
      });
      try {
        const started = await service.waitForLog('Service started');
        const base = `http://127.0.0.1:${started.health_port}/api`;
        // Ready once the supervisor has finished its first round.
        let res = await fetch(`${base}/ready`);
        for (let i = 0; i < 100 && res.status !== 200; i++) {
          await new Promise(resolve => setTimeout(resolve, 50));
          res = await fetch(`${base}/ready`);
        }
        expect(await res.json()).to.deepEqual({
          status: 'ready',
          checks: {postgres: {status: 'up'}, 'stay-alive': {status: 'up'}},
        });
      } finally {
        service.child.kill('SIGTERM');
        expect((await service.exited()).code).to.equal(0);
      }
    });

    it('the producer is ready while its last tick is under two minutes old, and stuck after', async () => {
      let now = new Date('2026-11-21T10:00:05Z');
      const schedulerLogs = new LogCapture();
      const scheduler = await backgroundApp(
        {appMode: 'scheduler', healthPort: 0, cronCatchUpMinutes: 0},
        a => a.bind(ProducerBindings.CLOCK).to(() => now),
        schedulerLogs,
      );
      const port = scheduler.getSync(HealthBindings.SERVER).server!.port;
      const ready = () => fetch(`http://127.0.0.1:${port}/api/ready`);
      const observer = scheduler.getSync(ProducerBindings.OBSERVER);
      const deadline = Date.now() + 10_000;
      while (!observer.lastTickFinishedAt() && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20));
      }
      expect((await ready()).status).to.equal(200);
      now = new Date('2026-11-21T10:02:04Z');
      expect((await ready()).status).to.equal(200);
      now = new Date('2026-11-21T10:02:07Z');
      const stuck = await ready();
      expect(stuck.status).to.equal(503);
      expect(((await stuck.json()) as ErrorBody).error.details).to.deepEqual([
        {
          path: '/producer',
          code: 'unavailable',
          message: 'not available',
        },
      ]);
      expect(schedulerLogs.find('Readiness check failed')).to.containDeep([
        {
          check: 'producer',
          reason: 'the last producer tick finished 122 s ago (limit 120 s)',
        },
      ]);
    });

    it('the producer is not ready while it has no broker connection, and says so', async () => {
      const {proxy, port: amqpPort} = await proxyTo(amqpTarget, 5672);
      const schedulerLogs = new LogCapture();
      const scheduler = await backgroundApp(
        {
          appMode: 'scheduler',
          healthPort: 0,
          cronCatchUpMinutes: 0,
          amqpUrl: viaPort(TEST_AMQP_URL, amqpPort),
        },
        a => a.bind(ProducerBindings.CLOCK).to(() => new Date()),
        schedulerLogs,
      );
      const port = scheduler.getSync(HealthBindings.SERVER).server!.port;
      const ready = () => fetch(`http://127.0.0.1:${port}/api/ready`);
      const observer = scheduler.getSync(ProducerBindings.OBSERVER);
      const deadline = Date.now() + 10_000;
      while (!observer.lastTickFinishedAt() && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20));
      }
      expect((await ready()).status).to.equal(200);
      await proxy.close();
      while (observer.brokerConnected() && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20));
      }
      const down = await ready();
      expect(down.status).to.equal(503);
      expect(((await down.json()) as ErrorBody).error.details).to.containEql({
        path: '/producer',
        code: 'unavailable',
        message: 'not available',
      });
      // The reason is logged, not shown to anonymous callers.
      expect(schedulerLogs.find('Readiness check failed')).to.containDeep([
        {
          check: 'producer',
          reason:
            'producer has no broker connection: due runs are claimed and wait for the sweeper',
        },
      ]);
    });

    it('is served by the API mode too when HEALTH_PORT is set, so one probe port fits every container', async () => {
      const {client, app: api} = await app({healthPort: 0});
      const port = api.getSync(HealthBindings.SERVER).server!.port;
      expect(
        (await fetch(`http://127.0.0.1:${port}/api/ready`)).status,
      ).to.equal(200);
      await client.get('/api/ready').expect(200);
    });

    it('is not opened when HEALTH_PORT is unset', async () => {
      const worker = await backgroundApp({appMode: 'worker'});
      expect(worker.getSync(HealthBindings.SERVER).server).to.be.undefined();
    });
  });

  describe('the container healthcheck (node dist/healthcheck.js)', () => {
    const HEALTHCHECK = path.resolve(__dirname, '../../healthcheck.js');
    function healthcheck(env: Record<string, string>) {
      return new Promise<{code: number | null; output: string}>(resolve => {
        execFile(
          process.execPath,
          [HEALTHCHECK],
          {env: {PATH: process.env.PATH ?? '/usr/bin:/bin', ...env}},
          (error, stdout) =>
            resolve({
              code: error ? ((error.code as number) ?? 1) : 0,
              output: stdout,
            }),
        );
      });
    }

    it('exits 0 when /ready answers 200 on HEALTH_PORT', async () => {
      const {app: api} = await app({healthPort: 0});
      const port = api.getSync(HealthBindings.SERVER).server!.port!;
      const result = await healthcheck({HEALTH_PORT: String(port)});
      expect(result).to.deepEqual({
        code: 0,
        output: `http://127.0.0.1:${port}/api/ready answered 200\n`,
      });
    });

    it('exits 1 when /ready answers 503, and when nothing listens', async () => {
      const {app: api} = await app({
        amqpUrl: viaPort(TEST_AMQP_URL, await closedPort()),
      });
      const port = new URL(api.restServer.url!).port;
      const notReady = await healthcheck({PORT: port});
      expect(notReady).to.deepEqual({
        code: 1,
        output: `http://127.0.0.1:${port}/api/ready answered 503\n`,
      });
      const closed = await healthcheck({
        HEALTH_PORT: String(await closedPort()),
      });
      expect(closed.code).to.equal(1);
      expect(closed.output).to.match(/ECONNREFUSED/);
    });
  });
});
