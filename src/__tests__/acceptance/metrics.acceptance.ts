import {expect} from '@loopback/testlab';
import {eventually as waitUntil} from '../fixtures/test-consumer';
import {execFileSync} from 'node:child_process';
import {existsSync, readFileSync} from 'node:fs';
import path from 'node:path';
import {METRICS} from '../../metrics/catalog';
import {HTTP_METHOD_LABELS} from '../../middleware/http-metrics.middleware';
import {asUser, givenTeam} from '../fixtures/security';
import {startService, ServiceProcess} from '../fixtures/service-process';
import {resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

const PROMTOOL = '/usr/bin/promtool';
const ROOT = path.resolve(__dirname, '../../..');
const VERSION = (
  JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

/** One sample line's value, by metric name and exact label set. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = (match[2] ?? '')
      .split(/,(?=[a-zA-Z_]\w*=")/)
      .filter(Boolean)
      .sort()
      .join(',');
    if (have === wanted) return Number(match[3]);
  }
  return undefined;
}

/**
 * Parses the text with Prometheus's own parser (promtool check metrics):
 * a format error fails; lint remarks are returned, so a test can hold our
 * own metric families to the naming rules.
 */
function promtoolRemarks(text: string): string[] {
  try {
    execFileSync(PROMTOOL, ['check', 'metrics'], {input: text, stdio: 'pipe'});
    return [];
  } catch (error) {
    const out = String((error as {stderr?: Buffer}).stderr ?? '');
    const stdout = String((error as {stdout?: Buffer}).stdout ?? '');
    if (/parsing error|error while linting/i.test(out + stdout)) {
      throw new Error(`not valid exposition text: ${out}${stdout}`);
    }
    return (out + stdout).split('\n').filter(Boolean);
  }
}

async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).to.equal(200);
  expect(response.headers.get('content-type')).to.match(/^text\/plain/);
  return response.text();
}

/**
 * The fixture's polling wait, with the description first. Two thirds of
 * the suite's minute: the outcome test took 15.7 s in a three-process CI
 * run, and a slower machine of the same kind takes a fifth longer.
 */
const eventually = (
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 40_000,
) => waitUntil(probe, timeoutMs, what);

describe('Prometheus metrics (issue 16)', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  describe('of a producer and a consumer process, on HEALTH_PORT', () => {
    const services: ServiceProcess[] = [];
    before(async () => {
      await truncateAll();
      await givenCatalog();
      await resetBroker();
      await sql(`DELETE FROM producer_state`);
    });
    after(async () => {
      for (const service of services.splice(0)) {
        service.child.kill('SIGTERM');
        await service.exited();
      }
      // Its fast clock left the fleet's last slot minutes ahead of real time.
      await sql(`DELETE FROM producer_state`);
      await sql(`DELETE FROM producer_slot_lease`);
    });

    const healthPortOf = async (service: ServiceProcess) =>
      Number(
        (await service.waitForLog('Health server listening', 90_000)).port,
      );

    it('count the tick, the claims, the publishes and every task outcome with their labels', async () => {
      // A worker that times out on every attempt.
      await sql(`UPDATE worker SET timeout_ms = 150 WHERE id = 3`);
      // Three one-time runs two simulated minutes ahead (60x: 2 real seconds):
      // one succeeds, one fails every attempt, one times out every attempt.
      const origin = new Date();
      const at = new Date(origin.getTime() + 2 * 60_000);
      await sql(
        `INSERT INTO scheduler (description, date_time, worker_id, params)
         VALUES ('ok', $1, 1, '{}'),
                ('fails', $1, 2, '{"exit_code": "1"}'),
                ('slow', $1, 3, '{"sleep_ms": "5000"}')`,
        [at],
      );
      const producer = startService({
        APP_MODE: 'scheduler',
        HEALTH_PORT: '0',
        CHAOS_CLOCK_SCALE: '60',
        CHAOS_CLOCK_ORIGIN: origin.toISOString(),
        // At 60x a slow start (10-30 s on a loaded 2-core machine) is 10-30
        // simulated minutes: the runs must stay inside the catch-up window.
        CRON_CATCHUP_MINUTES: '120',
      });
      const consumer = startService({APP_MODE: 'worker', HEALTH_PORT: '0'});
      services.push(producer, consumer);
      const [producerPort, consumerPort] = await Promise.all([
        healthPortOf(producer),
        healthPortOf(consumer),
      ]);

      // Every series that will exist is there at 0 before anything happened.
      const early = await scrape(consumerPort);
      expect(
        sample(early, 'task_scheduler_task_failures_total', {
          type: 'report',
          reason: 'timeout',
        }),
      ).to.equal(0);
      // (No reminder runs in this test: its series stays at 0 throughout.)
      expect(
        sample(early, 'task_scheduler_task_retries_total', {type: 'reminder'}),
      ).to.equal(0);

      await eventually('both failures to be stored', async () => {
        const rows = await sql<{n: number}>(
          `SELECT count(*)::int AS n FROM failed_task`,
        );
        return rows[0].n === 2;
      });
      await eventually('the successful run', async () => {
        const rows = await sql(
          `SELECT 1 FROM scheduler_execution WHERE status = 'succeeded'`,
        );
        return rows.length === 1;
      });

      const produced = await scrape(producerPort);
      expect(
        sample(produced, 'task_scheduler_claims_total', {result: 'claimed'}),
      ).to.equal(3);
      expect(
        sample(produced, 'task_scheduler_claims_total', {
          result: 'already_claimed',
        }),
      ).to.equal(0);
      expect(
        sample(produced, 'task_scheduler_publishes_total', {
          result: 'confirmed',
        }),
      ).to.equal(3);
      expect(
        sample(produced, 'task_scheduler_publishes_total', {
          result: 'returned',
        }),
      ).to.equal(0);
      expect(
        sample(produced, 'task_scheduler_dispatch_lag_seconds_count', {
          trigger: 'cron',
        }),
      ).to.equal(3);
      expect(
        sample(produced, 'task_scheduler_producer_tick_duration_seconds_count'),
      ).to.be.aboveOrEqual(1);
      const lastTick = sample(
        produced,
        'task_scheduler_producer_last_tick_timestamp_seconds',
      );
      expect(lastTick).to.be.within(
        origin.getTime() / 1000,
        Date.now() / 1000 + 1,
      );
      // The one-time schedulers switched themselves off once sent.
      await eventually('the scheduler gauge', async () => {
        const text = await scrape(producerPort);
        return (
          sample(text, 'task_scheduler_schedulers', {state: 'inactive'}) === 3
        );
      });
      expect(
        sample(produced, 'task_scheduler_build_info', {
          version: VERSION,
          commit: 'unknown',
          role: 'producer',
        }),
      ).to.equal(1);
      // A producer exports no consumer metrics, and the reverse.
      expect(produced).to.not.match(/task_scheduler_task_duration_seconds/);

      let consumed = '';
      await eventually('the stored failures in the gauge', async () => {
        consumed = await scrape(consumerPort);
        return sample(consumed, 'task_scheduler_failed_tasks_stored') === 2;
      });
      const worker = (outcome: string) =>
        sample(consumed, 'task_scheduler_task_duration_seconds_count', {
          type: 'worker',
          outcome,
        });
      expect(worker('succeeded')).to.equal(1);
      // exit_code=1: 3 retries, then failed; the slow one: 4 timeouts.
      expect(worker('retry')).to.equal(3);
      expect(worker('failed')).to.equal(1);
      expect(worker('timeout')).to.equal(4);
      expect(
        sample(consumed, 'task_scheduler_task_retries_total', {type: 'worker'}),
      ).to.equal(6);
      expect(
        sample(consumed, 'task_scheduler_task_failures_total', {
          type: 'worker',
          reason: 'exit_code',
        }),
      ).to.equal(1);
      expect(
        sample(consumed, 'task_scheduler_task_failures_total', {
          type: 'worker',
          reason: 'timeout',
        }),
      ).to.equal(1);
      // Queue waits: first attempts only (a retry's wait holds its delay).
      expect(
        sample(consumed, 'task_scheduler_task_queue_wait_seconds_count', {
          type: 'worker',
        }),
      ).to.equal(3);
      expect(sample(consumed, 'task_scheduler_tasks_in_progress')).to.equal(0);
      expect(
        sample(consumed, 'task_scheduler_consumer_last_task_timestamp_seconds'),
      ).to.be.above(origin.getTime() / 1000);
      // Queue gauges are cached 5 s: the first scrape may have read them
      // before the consumer subscribed, so wait for a fresh read.
      await eventually('the consumer in the queue gauges', async () => {
        const text = await scrape(consumerPort);
        return (
          sample(text, 'task_scheduler_queue_consumers', {
            queue: 'cron_scheduler',
          }) === 1 &&
          sample(text, 'task_scheduler_queue_messages', {
            queue: 'cron_scheduler',
          }) === 0
        );
      });
      expect(consumed).to.match(/^process_cpu_seconds_total /m);
      expect(consumed).to.not.match(/task_scheduler_claims_total/);

      for (const text of [produced, consumed]) {
        const ours = promtoolRemarks(text).filter(remark =>
          remark.startsWith('task_scheduler_'),
        );
        expect(ours).to.deepEqual([]);
      }
    });
  });

  describe('of the API', () => {
    let given: TestApp;
    before(async () => {
      await truncateAll();
      await givenCatalog();
      given = await givenRunningApp({appMode: 'api'});
    });
    after(async () => {
      await given?.app.stop();
    });

    it('are for admins only on the API port', async () => {
      const team = await givenTeam(given.app);
      await given.client.get('/api/metrics').expect(401);
      await asUser(given.client, team.operator).get('/api/metrics').expect(403);
      await asUser(given.client, team.viewer).get('/api/metrics').expect(403);
      const {text} = await asUser(given.client, team.admin)
        .get('/api/metrics')
        .expect(200)
        .expect('Content-Type', /^text\/plain/);
      expect(text).to.match(/^task_scheduler_http_requests_in_flight /m);
    });

    it('label requests by route template and status code, never by raw path', async () => {
      const team = await givenTeam(given.app);
      const admin = asUser(given.client, team.admin);
      await admin.get('/api/schedulers/987654').expect(404);
      await admin.get('/api/schedulers/123456').expect(404);
      await given.client.get('/api/no-such-route/424242').expect(404);
      await given.client.get('/api/ping').expect(200);
      const {text} = await admin.get('/api/metrics').expect(200);
      expect(text).to.not.match(/987654|123456|424242|no-such-route/);
      expect(
        sample(text, 'task_scheduler_http_request_duration_seconds_count', {
          method: 'GET',
          route: '/api/schedulers/{id}',
          code: '404',
        }),
      ).to.equal(2);
      expect(
        sample(text, 'task_scheduler_http_request_duration_seconds_count', {
          method: 'GET',
          route: '/api/ping',
          code: '200',
        }),
      ).to.equal(1);
      expect(
        sample(text, 'task_scheduler_http_request_duration_seconds_count', {
          method: 'GET',
          route: 'unmatched',
          code: '404',
        }),
      ).to.be.aboveOrEqual(1);
      expect(promtoolRemarks(text).filter(r => r.startsWith('task_'))).to.eql(
        [],
      );
    });

    it('keep the method label to a handful of values, whatever methods scanners send', async () => {
      const team = await givenTeam(given.app);
      const admin = asUser(given.client, team.admin);
      const unusual = ['PROPFIND', 'MKCOL', 'SEARCH', 'M-SEARCH', 'PURGE'];
      for (const method of unusual) {
        for (const target of ['/api/schedulers/1', '/api/no-such-route']) {
          const response = await fetch(`${given.app.restServer.url}${target}`, {
            method,
          });
          expect(response.status).to.be.within(400, 499);
        }
      }
      const {text} = await admin.get('/api/metrics').expect(200);
      const methods = new Set(
        [
          ...text.matchAll(
            /^task_scheduler_http_request_duration_seconds_count\{method="([^"]*)"/gm,
          ),
        ].map(match => match[1]),
      );
      for (const method of methods) {
        expect(HTTP_METHOD_LABELS).to.containEql(method);
      }
      const others = [
        ...text.matchAll(
          /^task_scheduler_http_request_duration_seconds_count\{method="other",[^}]*\} (\d+)$/gm,
        ),
      ].reduce((total, match) => total + Number(match[1]), 0);
      expect(others).to.equal(unusual.length * 2);
    });

    it('count re-drives where they happen', async () => {
      await resetBroker();
      const team = await givenTeam(given.app);
      const [scheduler] = await sql<{id: number}>(
        `INSERT INTO scheduler (description, schedule, worker_id, params)
         VALUES ('redriven', '0 0 1 1 *', 1, '{}') RETURNING id`,
      );
      const [failed] = await sql<{id: number}>(
        `INSERT INTO failed_task (scheduler_id, type, task_id, params_scheduler, payload, failed_reason, failed_at)
         VALUES ($1, 'worker', 1, '{}', '{}', 'worker exited with code 3', now())
         RETURNING id`,
        [scheduler.id],
      );
      await asUser(given.client, team.operator)
        .post(`/api/failed-tasks/${failed.id}/redrive`)
        .send({})
        .expect(202);
      const {text} = await asUser(given.client, team.admin)
        .get('/api/metrics')
        .expect(200);
      expect(sample(text, 'task_scheduler_redrives_total')).to.equal(1);
    });

    it('document every metric of the catalog in the monitoring guide', () => {
      const guide = readFileSync(path.join(ROOT, 'docs/monitoring.md'), 'utf8');
      for (const metric of Object.values(METRICS)) {
        expect(guide).to.containEql(`\`${metric.name}\``);
      }
    });
  });

  it('has promtool to parse the exposition text (CI installs Debian prometheus)', () => {
    expect(existsSync(PROMTOOL)).to.be.true();
  });
});
