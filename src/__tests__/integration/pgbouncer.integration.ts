import {expect} from '@loopback/testlab';
import {eventually as waitUntil} from '../fixtures/test-consumer';
import {loadConfig} from '../../config';
import {createLedgerPool, RunLedger} from '../../consumer/run-ledger';
import {createPool} from '../../database/pg-pool';
import {STAY_ALIVE_LOCK_SPACE} from '../../stay-alive/scheduler-locks';
import {startPgBouncer, PgBouncer} from '../fixtures/pgbouncer';
import {asUser, givenTeam, TEST_PASSWORD} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {resetBroker} from '../fixtures/test-broker';
import {
  givenCatalog,
  sql,
  truncateAll,
  TEST_DATABASE_URL,
} from '../fixtures/test-database';
import {givenProducer, insertSchedulers} from '../fixtures/test-producer';
import {LogCapture} from '../fixtures/log-capture';

/** The fixture's polling wait, with the description first. */
const eventually = <T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 20_000,
) => waitUntil(probe, timeoutMs, what);

const runStatus = (id: number) =>
  sql<{status: string}>(
    `SELECT status FROM scheduler_execution WHERE scheduler_id = $1`,
    [id],
  ).then(rows => (rows[0]?.status === 'succeeded' ? rows[0] : undefined));

/**
 * Issue 23, item 5: every role through PgBouncer in transaction pooling
 * mode (DATABASE_POOL_MODE=transaction), with four server connections
 * shared by every client, and session-bound work (stay-alive locks) on
 * DATABASE_DIRECT_URL.
 */
describe('PostgreSQL behind PgBouncer (transaction pooling)', () => {
  let bouncer: PgBouncer;

  before(async () => {
    bouncer = await startPgBouncer(TEST_DATABASE_URL, {poolSize: 4});
  });
  after(async () => {
    await bouncer?.stop();
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
  });

  it('refuses a pool that sends session settings, which is why the pool mode exists', async () => {
    const logs = new LogCapture();
    const sessionPool = createPool(bouncer.url, logs.logger);
    try {
      await expect(sessionPool.query('SELECT 1')).to.be.rejectedWith(
        /unsupported startup parameter/,
      );
    } finally {
      await sessionPool.end();
    }
    const pooled = createPool(
      {url: bouncer.url, poolMode: 'transaction'},
      logs.logger,
    );
    try {
      const {rows} = await pooled.query<{one: number}>('SELECT 1 AS one');
      expect(rows[0].one).to.equal(1);
    } finally {
      await pooled.end();
    }
  });

  it('marks runs from two consumers whose sessions share one server connection (no named statement)', async () => {
    const single = await startPgBouncer(TEST_DATABASE_URL, {poolSize: 1});
    const logs = new LogCapture();
    const target = {url: single.url, poolMode: 'transaction' as const};
    const pools = [0, 1].map(() =>
      createLedgerPool(target, logs.logger, false),
    );
    try {
      const ids = await insertSchedulers(
        Array.from({length: 8}, () => ({schedule: '* * * * *'})),
      );
      const runs = await sql<{id: string}>(
        `INSERT INTO scheduler_execution
                (scheduler_id, execution_key, slot, status, published_at, container_id)
         SELECT id, 'cron-2026-11-21-10-00', '2026-11-21T10:00:00Z', 'published', now(), 'test'
           FROM unnest($1::int[]) AS id
         RETURNING id`,
        [ids],
      );
      const ledgers = pools.map(
        pool => new RunLedger(pool, pool, 'transaction'),
      );
      // Each ledger client in turn, so both sessions prepare on the one
      // server connection the pooler hands them.
      for (const [i, run] of runs.entries()) {
        const ledger = ledgers[i % 2];
        expect(await ledger.start(Number(run.id), new Date(), 0)).to.equal(
          'run',
        );
        await ledger.finished(Number(run.id), 'succeeded', new Date(), 1);
      }
      const done = await sql<{n: number}>(
        `SELECT count(*)::int AS n FROM scheduler_execution WHERE status = 'succeeded'`,
      );
      expect(done[0].n).to.equal(runs.length);
    } finally {
      await Promise.all(pools.map(pool => pool.end()));
      await single.stop();
    }
  });

  describe('the whole service through it', () => {
    let given: TestApp;
    before(async () => {
      given = await givenRunningApp({
        appMode: 'all',
        databaseUrl: bouncer.url,
        databasePoolMode: 'transaction',
        databaseDirectUrl: TEST_DATABASE_URL,
        stayAlive: {
          ...loadConfig({}).stayAlive,
          maxWorkers: 1,
          reconcileMs: 500,
        },
      });
    });
    after(async () => {
      await given?.app.stop();
    });

    it('signs in, saves, runs now and records the run', async () => {
      const team = await givenTeam(given.app);
      const {body: login} = await given.client
        .post('/api/auth/login')
        .send({email: team.operator.email, password: TEST_PASSWORD})
        .expect(200);
      const operator = asUser(given.client, {
        token: login.token ?? login.access_token,
      });
      const {body: created} = await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            schedule: '0 0 1 1 *',
            report_id: undefined,
            worker_id: 1,
            params: {},
          }),
        )
        .expect(201);
      // Reads by id from many requests at once, over the pooler's shared
      // server connections: a named statement would be missing on some.
      const reads = await Promise.all(
        Array.from({length: 12}, () =>
          operator.get(`/api/schedulers/${created.id}`),
        ),
      );
      expect(reads.map(read => read.status)).to.eql(reads.map(() => 200));
      await operator.post(`/api/schedulers/${created.id}/run`).expect(202);
      await eventually('the run to succeed', () => runStatus(created.id));
      const {body: audit} = await operator
        .get(
          `/api/audit-events?filter=${encodeURIComponent(JSON.stringify({where: {entity_id: String(created.id)}}))}`,
        )
        .expect(200);
      expect(audit.length).to.be.above(0);
    });

    it('holds STAY_ALIVE_MAX against concurrent saves (the cap travels in each transaction)', async () => {
      const team = await givenTeam(given.app);
      const admin = asUser(given.client, team.admin);
      const answers = await Promise.all(
        Array.from({length: 6}, () =>
          admin.post('/api/schedulers').send(
            givenSchedulerBody({
              schedule: undefined,
              report_id: undefined,
              params: {},
              worker_id: 4,
              stay_alive: true,
            }),
          ),
        ),
      );
      const statuses = answers.map(res => res.status);
      expect(statuses.filter(status => status === 201)).to.have.length(1);
      expect(statuses.filter(status => status === 422)).to.have.length(5);
      // Its supervisor locks it on the direct session and starts its worker.
      const [{id}] = await sql<{id: number}>(
        `SELECT id FROM scheduler WHERE stay_alive`,
      );
      await eventually('the stay-alive lock on a direct session', async () => {
        const rows = await sql(
          `SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
              AND classid = $1::oid AND objid = $2::oid AND granted`,
          [STAY_ALIVE_LOCK_SPACE, id],
        );
        return rows.length === 1 ? true : undefined;
      });
      await eventually('the stay-alive worker to start', async () =>
        given.logs.find('Stay-alive worker started').length > 0
          ? true
          : undefined,
      );
    });

    it('claims and publishes through it, and the consumer records the run', async () => {
      const [id] = await insertSchedulers([
        {schedule: '* * * * *', worker_id: 1, params: {}},
      ]);
      // A fast-clock producer of another test may have left the fleet's last
      // slot minutes ahead of real time.
      await sql(`DELETE FROM producer_state`);
      const producer = await givenProducer({cronCatchUpMinutes: 0}, 'pooled', {
        url: bouncer.url,
        poolMode: 'transaction',
      });
      try {
        // Ahead of the app's own producer (real clock), which has already
        // recorded the current minute as the fleet's last slot.
        const ahead = new Date(Date.now() + 120_000);
        ahead.setUTCSeconds(2, 0);
        const report = await producer.producer.tick(ahead);
        expect(report).to.containDeep({claimed: 1, published: 1});
      } finally {
        await producer.stop();
      }
      await eventually('the run to succeed', () => runStatus(id));
    });
  });
});
