import {expect} from '@loopback/testlab';
import {asUser, AuthedClient, givenUser} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/**
 * The ledger, failed tasks, notifications and audit events have bigint ids:
 * a busy installation passes 2^31 - 1 runs, and those rows must still be
 * found by id. Past 2^53 - 1 an id is no longer exact in JSON, so the API
 * refuses it with the uniform 400 instead of reading another row.
 */
describe('records with bigint ids', () => {
  const BEYOND_INT32 = 3_000_000_000;
  let given: TestApp;
  let viewer: AuthedClient;
  let operator: AuthedClient;
  let admin: AuthedClient;
  let adminId: number;
  before(async () => {
    await truncateAll();
    await givenCatalog();
    given = await givenRunningApp({nodeEnv: 'production'});
    const adminUser = await givenUser(given.app, 'admin');
    adminId = adminUser.id;
    admin = asUser(given.client, adminUser);
    const {body: scheduler} = await admin
      .post('/api/schedulers')
      .send(givenSchedulerBody({description: 'Nightly backup'}))
      .expect(201);
    viewer = asUser(given.client, await givenUser(given.app, 'viewer'));
    operator = asUser(given.client, await givenUser(given.app, 'operator'));
    await sql(
      `INSERT INTO scheduler_execution
         (id, scheduler_id, execution_key, container_id, status)
       VALUES ($1, $2, 'k1', 'test', 'succeeded')`,
      [BEYOND_INT32, scheduler.id],
    );
    await sql(
      `INSERT INTO failed_task
         (id, execution_id, scheduler_id, type, task_id, payload, failed_reason, retry_count, failed_at)
       VALUES ($1, $2, $3, 'worker', 2, '{}'::jsonb, 'boom', 3, now())`,
      [BEYOND_INT32 + 1, BEYOND_INT32, scheduler.id],
    );
  });
  after(() => given.app.stop());

  it('shows a run whose id is beyond 32 bits', async () => {
    const {body} = await viewer
      .get(`/api/scheduler-executions/${BEYOND_INT32}`)
      .expect(200);
    expect(body).to.containDeep({id: BEYOND_INT32, status: 'succeeded'});
  });

  it('finds that run through a filter on its id', async () => {
    const where = encodeURIComponent(
      JSON.stringify({where: {id: BEYOND_INT32}}),
    );
    const {body} = await viewer
      .get(`/api/scheduler-executions?filter=${where}`)
      .expect(200);
    expect(body.map((run: {id: number}) => run.id)).to.eql([BEYOND_INT32]);
  });

  it('shows a failed task whose id is beyond 32 bits', async () => {
    const {body} = await viewer
      .get(`/api/failed-tasks/${BEYOND_INT32 + 1}`)
      .expect(200);
    expect(body).to.containDeep({id: BEYOND_INT32 + 1, failed_reason: 'boom'});
  });

  it('redrives such a failed task', async () => {
    await operator
      .post(`/api/failed-tasks/${BEYOND_INT32 + 1}/redrive`)
      .expect(202);
    const [task] = await sql<{redrive_count: number}>(
      'SELECT redrive_count FROM failed_task WHERE id = $1',
      [BEYOND_INT32 + 1],
    );
    expect(task.redrive_count).to.equal(1);
  });

  it('shows a notification beyond 32 bits to its owner only', async () => {
    const alice = await givenUser(given.app, 'viewer');
    const bob = await givenUser(given.app, 'viewer');
    const id = BEYOND_INT32 + 2;
    await sql(
      `INSERT INTO notification (id, user_id, title, payload)
       VALUES ($1, $2, 'Report ready', '{}')`,
      [id, alice.id],
    );
    const {body} = await asUser(given.client, alice)
      .get(`/api/notifications/${id}`)
      .expect(200);
    expect(body).to.containDeep({id, title: 'Report ready'});
    await asUser(given.client, bob).get(`/api/notifications/${id}`).expect(404);
  });

  for (const [controller, expected] of [
    ['ExecutionsReport', [String(BEYOND_INT32)]],
    ['FailedTasksReport', [String(BEYOND_INT32 + 1), String(BEYOND_INT32)]],
  ] as const) {
    it(`lists such rows in the ${controller}`, async () => {
      const day = 24 * 3600_000;
      const res = await operator
        .post('/api/reports/generate')
        .send({
          controller,
          options_interface: {
            delivery: {instant: true},
            output: {file: {type: 'Direct', format: 'CSV', filename: 'r'}},
          },
          report_params: {
            from: new Date(Date.now() - day).toISOString(),
            to: new Date(Date.now() + day).toISOString(),
          },
        })
        .expect(200);
      // The first column is the id; the redrive above added a small one.
      const row = res.text
        .trim()
        .split('\n')
        .find(line => line.startsWith(`${expected[0]},`));
      for (const id of expected) expect(row).to.containEql(id);
    });
  }

  it("lists a webhook's deliveries beyond 32 bits, ids as numbers", async () => {
    const [{id: hook}] = await sql<{id: number}>(
      `INSERT INTO webhook (user_id, url, events, signing_secret)
       VALUES ($1, 'https://example.com/hook', '["ping"]', 'x') RETURNING id`,
      [adminId],
    );
    await sql(
      `INSERT INTO webhook_delivery (id, webhook_id, event, message_id, payload)
       VALUES ($1, $2, 'ping', 'm1', '{}')`,
      [BEYOND_INT32, hook],
    );
    const {body: deliveries} = await admin
      .get(`/api/webhooks/${hook}/deliveries`)
      .expect(200);
    expect(deliveries.map((d: {id: number}) => d.id)).to.eql([BEYOND_INT32]);
    await sql(
      `ALTER TABLE webhook_delivery ALTER COLUMN id RESTART WITH ${BEYOND_INT32 + 10}`,
    );
    const {body: ping} = await admin
      .post(`/api/webhooks/${hook}/test`)
      .expect(202);
    expect(ping).to.containDeep({id: BEYOND_INT32 + 10, event: 'ping'});
  });

  it('answers 404 for an absent id beyond 32 bits', async () => {
    const {body} = await viewer
      .get(`/api/scheduler-executions/${BEYOND_INT32 + 7}`)
      .expect(404);
    expect(body.error.statusCode).to.equal(404);
  });

  for (const bad of ['9007199254740992', '99999999999999999999', '0', '-1']) {
    it(`refuses the id ${bad} with the uniform 400`, async () => {
      const {body} = await viewer
        .get(`/api/scheduler-executions/${bad}`)
        .expect(400);
      expect(body.error.statusCode).to.equal(400);
      expect(body.error.message).to.be.a.String();
    });
  }

  it('keeps 32-bit ids for tables whose ids are integers', async () => {
    const {body} = await viewer.get(`/api/schedulers/${BEYOND_INT32}`);
    expect(body.error.statusCode).to.equal(400);
  });
});
