import {expect} from '@loopback/testlab';
import type {TaskSchedulerApplication} from '../../application';
import type {Client} from '@loopback/testlab';
import {givenRunningApp} from '../fixtures/test-app';
import {asUser, AuthedClient, givenUser} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/**
 * Issue 17: a read by id is a named statement prepared once per pooled
 * connection (DATABASE_POOL_MODE=session). What a named statement keeps
 * across requests must not turn a schema change or a reconnect into 500s
 * that the unnamed read never gave (found by the hostile review).
 */
describe('reads by id as named statements', () => {
  let app: TaskSchedulerApplication;
  let client: Client;
  let logs: import('../fixtures/log-capture').LogCapture;
  let admin: AuthedClient;
  let schedulerId: number;

  before(async () => {
    await truncateAll();
    await givenCatalog();
    ({app, client, logs} = await givenRunningApp());
    admin = asUser(client, await givenUser(app, 'admin'));
    [{id: schedulerId}] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('t', '* * * * *', 1) RETURNING id`,
    );
  });
  after(async () => {
    await app.stop();
    await sql(`ALTER TABLE scheduler ALTER COLUMN schedule TYPE text`);
    await truncateAll();
  });

  async function statuses(path: string, times = 5): Promise<number[]> {
    const out: number[] = [];
    // Sequential: pg-pool hands back the same idle client (LIFO).
    for (let i = 0; i < times; i++) out.push((await admin.get(path)).status);
    return out;
  }

  it('answers ids the path schema refuses with 400, as before', async () => {
    const result: Record<string, number> = {};
    for (const id of ['99999999999', '2147483648', '-1', '0', 'abc', '1.5']) {
      result[id] = (await admin.get(`/api/schedulers/${id}`)).status;
    }
    expect(result).to.eql({
      '99999999999': 400,
      '2147483648': 400,
      '-1': 400,
      '0': 400,
      abc: 400,
      '1.5': 400,
    });
    expect((await admin.get(`/api/schedulers/2147483647`)).status).to.equal(
      404,
    );
  });

  it('keeps the owner scope of notifications (user_id condition)', async () => {
    const alice = await givenUser(app, 'viewer');
    const bob = await givenUser(app, 'viewer');
    const [{id}] = await sql<{id: number}>(
      `INSERT INTO notification (user_id, title, payload) VALUES ($1, 'x', '{}') RETURNING id`,
      [alice.id],
    );
    const got: number[] = [];
    for (const who of [alice, bob, alice, bob]) {
      got.push(
        (await asUser(client, who).get(`/api/notifications/${id}`)).status,
      );
    }
    got.push((await admin.get(`/api/notifications/${id}`)).status);
    expect(got).to.eql([200, 404, 200, 404, 200]);
  });

  it('still answers 503 when a by-id read outlasts statement_timeout', async () => {
    const slow = await givenRunningApp({apiStatementTimeoutMs: 300});
    const slowAdmin = asUser(slow.client, await givenUser(slow.app, 'admin'));
    const {Client: PgClient} = await import('pg');
    const {TEST_DATABASE_URL} = await import('../fixtures/test-database');
    const locker = new PgClient({connectionString: TEST_DATABASE_URL});
    await locker.connect();
    try {
      await slowAdmin.get(`/api/schedulers/${schedulerId}`).expect(200);
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE scheduler IN ACCESS EXCLUSIVE MODE');
      const res = await slowAdmin.get(`/api/schedulers/${schedulerId}`);
      await locker.query('ROLLBACK');
      expect({status: res.status, name: res.body.error?.name}).to.eql({
        status: 503,
        name: 'ServiceUnavailableError',
      });
    } finally {
      await locker.end();
      await slow.app.stop();
    }
  });

  it('keeps serving when its pooled sessions are terminated (a database restart), and says so', async () => {
    expect(await statuses(`/api/schedulers/${schedulerId}`)).to.eql([
      200, 200, 200, 200, 200,
    ]);
    logs.clear();
    await sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    // An idle client's error is the pool's 'error' event: it used to have
    // no listener, an uncaught exception that ended the API process.
    await new Promise(resolve => setTimeout(resolve, 300));
    expect(logs.find('Database connection lost')).to.not.be.empty();
    expect(await statuses(`/api/schedulers/${schedulerId}`)).to.eql([
      200, 200, 200, 200, 200,
    ]);
  });

  it('reads a record after a migration changed the type of a column it selects', async () => {
    // Every pooled connection the reads use has the statement prepared.
    await Promise.all(
      Array.from({length: 10}, () =>
        admin.get(`/api/schedulers/${schedulerId}`).expect(200),
      ),
    );
    // A deploy's migration, while this (old) API process keeps running.
    await sql(`ALTER TABLE scheduler ALTER COLUMN schedule TYPE varchar(2000)`);
    logs.clear();
    const after = await statuses(`/api/schedulers/${schedulerId}`, 15);
    const errors = JSON.stringify(logs.records).match(
      /cached plan must not change result type/g,
    );
    expect(after).to.eql(after.map(() => 200));
    expect(errors ?? []).to.be.empty();
  });
});
