import {expect} from '@loopback/testlab';
import {TASK_QUEUE} from '../../queue/topology';
import {startService, ServiceProcess} from '../fixtures/service-process';
import {
  drainQueue,
  resetBroker,
  TEST_AMQP_URL,
  vhostConfirmChannels,
} from '../fixtures/test-broker';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

/**
 * AMQP_PUBLISH_CHANNELS: the scheduler process spreads a minute's runs over
 * that many confirm channels, and each run still goes out once.
 */
describe('Producer process publish channels', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let service: ServiceProcess | undefined;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql(`DELETE FROM producer_state`);
  });
  afterEach(async () => {
    if (service?.child.exitCode === null && !service.child.signalCode) {
      service.child.kill('SIGKILL');
      await service.exited();
    }
    service = undefined;
  });

  async function publishedRuns(): Promise<number> {
    const [{count}] = await sql<{count: string}>(
      `SELECT count(*) FROM scheduler_execution WHERE status = 'published'`,
    );
    return Number(count);
  }

  it('publishes a minute of 12 runs over AMQP_PUBLISH_CHANNELS=3 confirm channels, each run once', async () => {
    await sql(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       SELECT 'every minute ' || n, '* * * * *', 1 FROM generate_series(1, 12) n`,
    );
    service = startService({
      APP_MODE: 'scheduler',
      CRON_CATCHUP_MINUTES: '0',
      AMQP_PUBLISH_CHANNELS: '3',
      CHAOS_CLOCK_SCALE: '60',
      CHAOS_CLOCK_ORIGIN: new Date().toISOString(),
    });
    const deadline = Date.now() + 15_000;
    while ((await publishedRuns()) < 12 && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 100));
    }
    expect(await vhostConfirmChannels()).to.equal(3);
    service.child.kill('SIGTERM');
    await service.exited();
    const messages = await drainQueue(TASK_QUEUE);
    const ids = messages.map(m =>
      String(m.properties.headers?.['x-execution-id']),
    );
    const published = await sql<{id: string}>(
      `SELECT id FROM scheduler_execution WHERE status = 'published'`,
    );
    expect(published.length).to.be.aboveOrEqual(12);
    expect(new Set(ids).size).to.equal(ids.length);
    expect([...ids].sort()).to.eql(published.map(row => row.id).sort());
  });

  it('ends a batch the broker leaves unanswered at AMQP_CONFIRM_TIMEOUT_MS, drops that connection and publishes again on a fresh one', async () => {
    await sql(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       SELECT 'every minute ' || n, '* * * * *', 1 FROM generate_series(1, 4) n`,
    );
    const broker = new URL(TEST_AMQP_URL);
    const proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    const port = await proxy.start();
    try {
      service = startService({
        APP_MODE: 'scheduler',
        AMQP_URL: viaPort(TEST_AMQP_URL, port),
        AMQP_CONFIRM_TIMEOUT_MS: '1000',
        CRON_CATCHUP_MINUTES: '0',
        CHAOS_CLOCK_SCALE: '60',
        CHAOS_CLOCK_ORIGIN: new Date().toISOString(),
      });
      const deadline = Date.now() + 15_000;
      while ((await publishedRuns()) < 4 && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 100));
      }
      expect(await publishedRuns()).to.be.aboveOrEqual(4);
      // The broker stops reading the producer's connection (flow control)
      // while it still serves new ones.
      proxy.stallOpen();
      const timedOut = await service.waitForLog('Publish confirms timed out');
      expect(timedOut).to.match({timeout_ms: 1000});
      expect(await service.waitForLog('Broker connection dropped')).to.match({
        reason: 'publish confirms timed out',
      });
      const before = await publishedRuns();
      const again = Date.now() + 15_000;
      while ((await publishedRuns()) <= before && Date.now() < again) {
        await new Promise(resolve => setTimeout(resolve, 100));
      }
      expect(await publishedRuns()).to.be.above(before);
      expect(proxy.accepted).to.be.aboveOrEqual(2);
    } finally {
      service?.child.kill('SIGKILL');
      await service?.exited();
      await proxy.close();
    }
  });

  it('refuses AMQP_PUBLISH_CHANNELS=0 at start with a clear message', async () => {
    service = startService({
      APP_MODE: 'scheduler',
      AMQP_PUBLISH_CHANNELS: '0',
    });
    const {code} = await service.exited();
    expect(code).to.not.equal(0);
    expect(service.stderr.join('\n') + service.stdout.join('\n')).to.match(
      /AMQP_PUBLISH_CHANNELS must be an integer between 1 and 16/,
    );
  });
});
