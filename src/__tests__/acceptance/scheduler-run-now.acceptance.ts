import {expect} from '@loopback/testlab';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  TestConsumer,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('run now and the trigger of each run (issue 15, items 1 and 6)', () => {
  let given: TestApp;
  let consumer: TestConsumer;
  let team: Team;
  let operator: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
    await resetBroker();
    consumer = await givenConsumer({
      workersDir: givenWorkersDir({
        'sample-worker': '#!/bin/sh\necho "ran with $*"\n',
      }),
    });
  });
  after(async () => {
    await consumer.stop();
    await given.app.stop();
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
    operator = asUser(given.client, team.operator);
  });

  const workerScheduler = async (overrides: Record<string, unknown> = {}) =>
    (
      await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            report_id: undefined,
            worker_id: 1,
            params: {colour: 'blue'},
            ...overrides,
          }),
        )
        .expect(201)
    ).body.id as number;

  it('runs a paused scheduler once, now, with a reason in the audit log', async () => {
    const id = await workerScheduler({status: false});
    const {body} = await operator
      .post(`/api/schedulers/${id}/run`)
      .set('X-Change-Reason', 'customer asked for a rerun')
      .send({params: {colour: 'red'}})
      .expect(202);
    expect(body).to.containDeep({trigger: 'manual', status: 'published'});
    expect(body.execution_key).to.match(/^manual-[0-9a-f-]{36}$/);
    const run = await eventually(
      async () => {
        const [row] = await sql<{status: string; trigger: string}>(
          `SELECT status, trigger FROM scheduler_execution WHERE id = $1`,
          [body.execution_id],
        );
        return row?.status === 'succeeded' ? row : undefined;
      },
      15_000,
      'the manual run to succeed',
    );
    expect(run.trigger).to.equal('manual');
    expect(
      consumer.logs.records.some(
        r => r.msg === 'Task output' && /colour=red/.test(String(r.line)),
      ),
    ).to.be.true();
    const [scheduler] = await sql<{status: boolean}>(
      `SELECT status FROM scheduler WHERE id = $1`,
      [id],
    );
    expect(scheduler.status).to.be.false();
    const [event] = await sql<{
      action: string;
      reason: string;
      actor_user_id: number;
    }>(
      `SELECT action, reason, actor_user_id FROM audit_event WHERE entity = 'scheduler' AND entity_id = $1`,
      [String(id)],
    );
    expect(event).to.deepEqual({
      action: 'run',
      reason: 'customer asked for a rerun',
      actor_user_id: team.operator.id,
    });
    const {body: manual} = await operator
      .get(`/api/schedulers/${id}/executions?trigger=manual&status=succeeded`)
      .expect(200);
    expect(manual.map((e: {id: number}) => e.id)).to.deepEqual([
      body.execution_id,
    ]);
    const {body: scheduled} = await operator
      .get(`/api/schedulers/${id}/executions?trigger=schedule`)
      .expect(200);
    expect(scheduled).to.deepEqual([]);
  });

  it('refuses viewers, stay-alive schedulers, unknown ids, bad bodies and long reasons', async () => {
    const id = await workerScheduler();
    await asUser(given.client, team.viewer)
      .post(`/api/schedulers/${id}/run`)
      .expect(403);
    await operator.post('/api/schedulers/999999/run').expect(404);
    await operator
      .post(`/api/schedulers/${id}/run`)
      .send({reason: 'x'.repeat(501)})
      .expect(422);
    await operator
      .post(`/api/schedulers/${id}/run`)
      .set('X-Change-Reason', 'y'.repeat(501))
      .expect(422);
    await operator
      .post(`/api/schedulers/${id}/run`)
      .send({params: 'not an object'})
      .expect(422);
    await operator
      .post(`/api/schedulers/${id}/run`)
      .send({params: {'--evil': 'x'}})
      .expect(422);
    const {body: stayAlive} = await asUser(given.client, team.admin)
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({
          schedule: undefined,
          report_id: undefined,
          params: {},
          worker_id: 4,
          stay_alive: true,
        }),
      )
      .expect(201);
    const refused = await operator
      .post(`/api/schedulers/${stayAlive.id}/run`)
      .expect(422);
    expect(refused.body.error.details[0]).to.containDeep({path: '/stay_alive'});
    // Nothing was claimed by the refusals.
    const [{n}] = await sql<{n: number}>(
      `SELECT count(*)::int AS n FROM scheduler_execution`,
    );
    expect(n).to.equal(0);
  });
});
