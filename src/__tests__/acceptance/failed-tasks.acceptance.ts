import {expect} from '@loopback/testlab';
import {TASK_QUEUE} from '../../queue/topology';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {
  drainQueue,
  resetBroker,
  vhostConnectionNames,
  withChannel,
} from '../fixtures/test-broker';
import {ageClaims, givenProducer} from '../fixtures/test-producer';
import {givenCatalog, truncateAll, sql} from '../fixtures/test-database';

describe('failed tasks and run history API', () => {
  let given: TestApp;
  let team: Team;
  let schedulerId: number;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    team = await givenTeam(given.app);
    // Never due while a test runs: the app's own producer ticks on real
    // time, and a run it fired at a minute boundary was drained instead of
    // the re-drive's message (CI: '{}' for '{"batch":1}').
    [{id: schedulerId}] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, worker_id) VALUES ('w', '0 0 1 1 *', 2) RETURNING id`,
    );
  });

  async function givenFailedTask(overrides: Record<string, unknown> = {}) {
    const row = {
      scheduler_id: schedulerId,
      type: 'worker',
      task_id: 2,
      params_scheduler: '{"batch":5}',
      failed_reason: 'worker exited with code 3',
      retry_count: 3,
      ...overrides,
    };
    const [{id}] = await sql<{id: string}>(
      `INSERT INTO failed_task (scheduler_id, type, task_id, params_scheduler, payload, failed_reason, retry_count, failed_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, now()) RETURNING id`,
      [
        row.scheduler_id,
        row.type,
        row.task_id,
        row.params_scheduler,
        row,
        row.failed_reason,
        row.retry_count,
      ],
    );
    return Number(id);
  }

  it('lists failed tasks and shows one', async () => {
    const id = await givenFailedTask();
    const viewer = asUser(given.client, team.viewer);
    const list = await viewer.get('/api/failed-tasks').expect(200);
    expect(list.body).to.have.length(1);
    const one = await viewer.get(`/api/failed-tasks/${id}`).expect(200);
    expect(one.body).to.containDeep({
      type: 'worker',
      task_id: 2,
      retry_count: 3,
      redrive_count: 0,
    });
    await asUser(given.client, team.admin)
      .delete(`/api/failed-tasks/${id}`)
      .expect(404);
  });

  it('lists failed tasks newest first unless the filter gives an order (review of the runbook: the oldest 100 came first)', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await givenFailedTask());
    const viewer = asUser(given.client, team.viewer);
    const newest = await viewer.get('/api/failed-tasks').expect(200);
    expect(newest.body.map((task: {id: number}) => task.id)).to.deepEqual(
      [...ids].reverse(),
    );
    const paged = await viewer
      .get('/api/failed-tasks')
      .query({filter: JSON.stringify({limit: 2})})
      .expect(200);
    expect(paged.body.map((task: {id: number}) => task.id)).to.deepEqual([
      ids[2],
      ids[1],
    ]);
    const oldest = await viewer
      .get('/api/failed-tasks')
      .query({filter: JSON.stringify({order: [' id  ASC ']})})
      .expect(200);
    expect(oldest.body.map((task: {id: number}) => task.id)).to.deepEqual(ids);
  });

  it('re-drives with a JSON null body as with none (was a 500, found by the API fuzzer)', async () => {
    const id = await givenFailedTask();
    await asUser(given.client, team.operator)
      .post(`/api/failed-tasks/${id}/redrive`)
      .set('Content-Type', 'application/json')
      .send('null')
      .expect(202);
    const [message] = await drainQueue(TASK_QUEUE);
    expect(JSON.parse(message.content.toString())).to.containDeep({
      params_scheduler: '{"batch":5}',
    });
  });

  it('re-drives a failed task as a fresh run, with edited params, recording who and when', async () => {
    const id = await givenFailedTask();
    const res = await asUser(given.client, team.operator)
      .post(`/api/failed-tasks/${id}/redrive`)
      .send({params: {batch: 1, dry_run: true}})
      .expect(202);
    expect(res.body).to.containDeep({
      failed_task_id: id,
      execution_key: `redrive-${id}-1`,
    });
    const [message] = await drainQueue(TASK_QUEUE);
    expect(JSON.parse(message.content.toString())).to.deepEqual({
      type: 'worker',
      id: 2,
      scheduler_id: schedulerId,
      params_scheduler: '{"batch":1,"dry_run":true}',
    });
    expect(message.properties.headers?.['x-execution-id']).to.equal(
      res.body.execution_id,
    );
    const [failed] = await sql(`SELECT * FROM failed_task WHERE id = $1`, [id]);
    expect(failed).to.containDeep({
      redrive_count: 1,
      redriven_by: team.operator.id,
    });
    expect(failed.redriven_at).to.not.be.null();
    const [run] = await sql(
      `SELECT status, trigger FROM scheduler_execution WHERE id = $1`,
      [res.body.execution_id],
    );
    expect(run).to.deepEqual({status: 'published', trigger: 'redrive'});
    const audited = await sql(
      `SELECT actor_user_id, action, entity, entity_id FROM audit_event WHERE action = 'redrive'`,
    );
    expect(audited).to.deepEqual([
      {
        actor_user_id: team.operator.id,
        action: 'redrive',
        entity: 'failed-task',
        entity_id: String(id),
      },
    ]);

    const again = await asUser(given.client, team.operator)
      .post(`/api/failed-tasks/${id}/redrive`)
      .expect(202);
    expect(again.body.execution_key).to.equal(`redrive-${id}-2`);
    const [second] = await drainQueue(TASK_QUEUE);
    expect(JSON.parse(second.content.toString()).params_scheduler).to.equal(
      '{"batch":5}',
    );
  });

  it('keeps a re-drive whose publish was not confirmed (202 pending); the sweeper sends its edited payload, and the next re-drive gets the next key', async () => {
    const id = await givenFailedTask();
    // No queue takes the message: it comes back, so no confirm counts.
    await withChannel(channel => channel.deleteQueue(TASK_QUEUE));
    const res = await asUser(given.client, team.operator)
      .post(`/api/failed-tasks/${id}/redrive`)
      .send({params: {batch: 1}})
      .expect(202);
    expect(res.body).to.containDeep({
      execution_key: `redrive-${id}-1`,
      status: 'pending',
    });
    const [run] = await sql<{status: string; payload: object}>(
      'SELECT status, payload FROM scheduler_execution WHERE id = $1',
      [res.body.execution_id],
    );
    expect(run.status).to.equal('claimed');
    expect(
      (
        await sql('SELECT redrive_count FROM failed_task WHERE id = $1', [id])
      )[0],
    ).to.deepEqual({redrive_count: 1});

    await resetBroker();
    const p = await givenProducer({cronCatchUpMinutes: 0});
    try {
      await ageClaims(60);
      const tick = await p.producer.tick(new Date());
      expect(tick.swept).to.equal(1);
    } finally {
      await p.stop();
    }
    const [message] = await drainQueue(TASK_QUEUE);
    expect(JSON.parse(message.content.toString()).params_scheduler).to.equal(
      '{"batch":1}',
    );

    const again = await asUser(given.client, team.operator)
      .post(`/api/failed-tasks/${id}/redrive`)
      .expect(202);
    expect(again.body).to.containDeep({
      execution_key: `redrive-${id}-2`,
      status: 'published',
    });
  });

  it('gives concurrent re-drives of one failed task distinct keys', async () => {
    const id = await givenFailedTask();
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map(() =>
        asUser(given.client, team.operator)
          .post(`/api/failed-tasks/${id}/redrive`)
          .expect(202),
      ),
    );
    expect(results.map(r => r.body.execution_key).sort()).to.deepEqual(
      [1, 2, 3, 4, 5].map(n => `redrive-${id}-${n}`),
    );
    expect(await drainQueue(TASK_QUEUE)).to.have.length(5);
  });

  it('refuses edited worker params whose keys would become options (422)', async () => {
    const id = await givenFailedTask();
    await asUser(given.client, team.operator)
      .post(`/api/failed-tasks/${id}/redrive`)
      .send({params: {'--force': true}})
      .expect(422);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it('shares one broker connection across re-drives and closes it when the app stops', async () => {
    const mine = async () =>
      (await vhostConnectionNames()).filter(
        name => name === `task-scheduler ${process.pid}`,
      ).length;
    const baseline = await mine();
    const other = await givenRunningApp();
    try {
      for (let i = 0; i < 3; i++) {
        const id = await givenFailedTask();
        await asUser(other.client, team.operator)
          .post(`/api/failed-tasks/${id}/redrive`)
          .expect(202);
      }
      expect(await drainQueue(TASK_QUEUE)).to.have.length(3);
      expect(await mine()).to.equal(baseline + 1);
    } finally {
      await other.app.stop();
    }
    expect(await mine()).to.equal(baseline);
  });

  it('refuses to re-drive a poison message, a deleted scheduler, or for a viewer', async () => {
    const poison = await givenFailedTask({
      type: null,
      task_id: null,
      scheduler_id: null,
    });
    const operator = asUser(given.client, team.operator);
    await operator.post(`/api/failed-tasks/${poison}/redrive`).expect(422);
    const orphan = await givenFailedTask({scheduler_id: 999999});
    await operator.post(`/api/failed-tasks/${orphan}/redrive`).expect(422);
    const fine = await givenFailedTask();
    await asUser(given.client, team.viewer)
      .post(`/api/failed-tasks/${fine}/redrive`)
      .expect(403);
    await operator
      .post(`/api/failed-tasks/${fine}/redrive`)
      .send({params: 'x'})
      .expect(422);
    await operator.post('/api/failed-tasks/123456/redrive').expect(404);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(0);
  });

  it("lists a scheduler's runs newest first, with paging", async () => {
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, executed_at, container_id, status)
       SELECT $1, 'cron-2026-11-21-10-0' || n, '2026-11-21T10:00:00Z'::timestamptz + n * interval '1 minute', 'h', 'succeeded'
         FROM generate_series(1, 5) AS n`,
      [schedulerId],
    );
    const viewer = asUser(given.client, team.viewer);
    const page = await viewer
      .get(`/api/schedulers/${schedulerId}/executions?limit=2&skip=1`)
      .expect(200);
    expect(
      page.body.map((r: {execution_key: string}) => r.execution_key),
    ).to.deepEqual(['cron-2026-11-21-10-04', 'cron-2026-11-21-10-03']);
    expect(page.body[0]).to.containDeep({status: 'succeeded', attempts: 0});
    const all = await viewer
      .get(`/api/schedulers/${schedulerId}/executions`)
      .expect(200);
    expect(all.body).to.have.length(5);
    await viewer.get('/api/schedulers/999999/executions').expect(404);
    await viewer
      .get(`/api/schedulers/${schedulerId}/executions?limit=5000`)
      .expect(400);
    await given.client
      .get(`/api/schedulers/${schedulerId}/executions`)
      .expect(401);
  });
});
