import {expect} from '@loopback/testlab';
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {TASK_QUEUE} from '../../queue/topology';
import {startService, ServiceProcess} from '../fixtures/service-process';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

/**
 * Regression cases from the chaos suite, as ordinary processes: the fast
 * test clock, and a producer killed between claim and publish.
 */
describe('Producer process under the chaos settings', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let dir: string;
  const services: ServiceProcess[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'producer-crash-'));
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    // Other tests leave the shared "last evaluated slot" behind.
    await sql(`DELETE FROM producer_state`);
  });
  afterEach(async () => {
    for (const service of services.splice(0)) {
      if (service.child.exitCode === null && !service.child.signalCode) {
        service.child.kill('SIGKILL');
        await service.exited();
      }
    }
    rmSync(dir, {recursive: true, force: true});
  });

  const producer = (env: Record<string, string>) => {
    const service = startService({
      APP_MODE: 'scheduler',
      CRON_CATCHUP_MINUTES: '0',
      ...env,
    });
    services.push(service);
    return service;
  };

  const givenEveryMinuteScheduler = () =>
    sql(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       VALUES ('every minute', '* * * * *', 1)`,
    );

  async function waitForRows<T>(
    query: () => Promise<T[]>,
    enough: (rows: T[]) => boolean,
  ): Promise<T[]> {
    const deadline = Date.now() + 12_000;
    for (;;) {
      const rows = await query();
      if (enough(rows) || Date.now() > deadline) return rows;
      await new Promise(resolve => setTimeout(resolve, 100));
    }
  }

  it('runs simulated minutes fast with CHAOS_CLOCK_SCALE, one claim per minute', async () => {
    await givenEveryMinuteScheduler();
    producer({
      CHAOS_CLOCK_SCALE: '60',
      CHAOS_CLOCK_ORIGIN: new Date().toISOString(),
      // At 60x a tick more than one real second late (a loaded CI machine)
      // would otherwise skip its slot: catching up keeps every minute.
      CRON_CATCHUP_MINUTES: '30',
    });
    // 60x: a simulated minute per real second.
    const rows = await waitForRows(
      () =>
        sql<{slot: Date}>(`SELECT slot FROM scheduler_execution ORDER BY slot`),
      found => found.length >= 4,
    );
    expect(rows.length).to.be.aboveOrEqual(4);
    const minutes = rows.map(row => row.slot.getTime() / 60_000);
    minutes.forEach((minute, i) => {
      if (i > 0) expect(minute).to.equal(minutes[i - 1] + 1);
    });
  });

  it('a producer killed between claim and publish leaves the claim to the sweeper of another', async () => {
    await givenEveryMinuteScheduler();
    const trigger = path.join(dir, 'kill-after-claim');
    writeFileSync(trigger, '');
    const clock = {
      CHAOS_CLOCK_SCALE: '30',
      CHAOS_CLOCK_ORIGIN: new Date().toISOString(),
      // The doomed producer's slot lease stays unfinished: the survivor takes
      // it over after this long (real time), as in the chaos suite.
      CRON_SLOT_LEASE_MS: '2000',
    };
    const doomed = producer({...clock, CHAOS_KILL_AFTER_CLAIM_FILE: trigger});
    const {signal} = await doomed.exited();
    expect(signal).to.equal('SIGKILL');
    expect(existsSync(trigger)).to.be.false();
    const orphaned = await sql<{id: string; status: string}>(
      `SELECT id, status FROM scheduler_execution WHERE published_at IS NULL`,
    );
    expect(orphaned).to.have.length(1);
    expect(orphaned[0].status).to.equal('claimed');
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);

    // A survivor's sweeper publishes it (30x: 30 simulated seconds = 1 s),
    // while its minute is inside the catch-up window.
    producer({
      ...clock,
      CRON_SWEEP_AFTER_MS: '30000',
      CRON_CATCHUP_MINUTES: '5',
    });
    const swept = await waitForRows(
      () =>
        sql<{status: string}>(
          `SELECT status FROM scheduler_execution WHERE id = $1`,
          [orphaned[0].id],
        ),
      found => found[0]?.status === 'published',
    );
    expect(swept[0].status).to.equal('published');
    const messages = await drainQueue(TASK_QUEUE);
    const forOrphan = messages.filter(
      message =>
        String(message.properties.headers?.['x-execution-id']) ===
        orphaned[0].id,
    );
    expect(forOrphan).to.have.length(1);
  });

  for (const variable of ['CHAOS_CLOCK_SCALE', 'CHAOS_KILL_AFTER_CLAIM_FILE']) {
    it(`a production process refuses ${variable} at start (exit 1, one line naming it)`, async () => {
      const service = producer({
        NODE_ENV: 'production',
        JWT_SECRET: 'a-production-secret-of-enough-length-0123456789',
        [variable]: variable === 'CHAOS_CLOCK_SCALE' ? '10' : '/tmp/kill',
      });
      const {code} = await service.exited();
      expect(code).to.equal(1);
      expect(service.stderr).to.have.length(1);
      const line = JSON.parse(service.stderr[0]);
      expect(line).to.containDeep({level: 'error', variable});
      expect(line.msg).to.match(/refused when NODE_ENV=production/);
    });
  }
});
