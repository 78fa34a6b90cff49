import {expect} from '@loopback/testlab';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {TASK_QUEUE} from '../../queue/topology';

describe('bulk actions on schedulers (issue 15, item 9)', () => {
  let given: TestApp;
  let team: Team;
  let operator: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    team = await givenTeam(given.app);
    operator = asUser(given.client, team.operator);
  });

  const created = async (overrides: Record<string, unknown> = {}) =>
    (
      await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody(overrides))
        .expect(201)
    ).body.id as number;

  it('pauses, resumes, runs and deletes each scheduler, with one result and one audit event per id', async () => {
    const a = await created();
    const b = await created();
    const {body: paused} = await operator
      .post('/api/schedulers/bulk')
      .send({action: 'pause', ids: [a, b, 999999], reason: 'maintenance'})
      .expect(200);
    expect(paused.results).to.deepEqual([
      {id: a, status: 200},
      {id: b, status: 200},
      {id: 999999, status: 404, error: paused.results[2].error},
    ]);
    const states = await sql<{status: boolean}>(
      `SELECT status FROM scheduler ORDER BY id`,
    );
    expect(states.map(s => s.status)).to.deepEqual([false, false]);
    const {body: ran} = await operator
      .post('/api/schedulers/bulk')
      .send({action: 'run', ids: [a]})
      .expect(200);
    expect(ran.results).to.deepEqual([{id: a, status: 202}]);
    expect(await drainQueue(TASK_QUEUE)).to.have.length(1);
    await operator
      .post('/api/schedulers/bulk')
      .send({action: 'resume', ids: [a]})
      .expect(200);
    const {body: removed} = await operator
      .post('/api/schedulers/bulk')
      .send({action: 'delete', ids: [b]})
      .expect(200);
    expect(removed.results).to.deepEqual([{id: b, status: 204}]);
    const audit = await sql<{
      action: string;
      entity_id: string;
      reason: string;
    }>(
      `SELECT action, entity_id, reason FROM audit_event
        WHERE entity = 'scheduler' AND action <> 'create' ORDER BY id`,
    );
    expect(audit).to.deepEqual([
      {action: 'update', entity_id: String(a), reason: 'maintenance'},
      {action: 'update', entity_id: String(b), reason: 'maintenance'},
      {action: 'run', entity_id: String(a), reason: null},
      {action: 'update', entity_id: String(a), reason: null},
      {action: 'delete', entity_id: String(b), reason: null},
    ]);
  });

  it('applies the rules of a single change to each item', async () => {
    const once = await created({
      schedule: undefined,
      date_time: '2099-06-01T00:00:00Z',
      status: false,
    });
    // Resuming a one-time scheduler whose moment has passed is refused alone.
    await sql(
      `UPDATE scheduler SET date_time = '2020-01-01T00:00:00Z' WHERE id = $1`,
      [once],
    );
    const ok = await created({status: false});
    const {body} = await operator
      .post('/api/schedulers/bulk')
      .send({action: 'resume', ids: [once, ok]})
      .expect(200);
    expect(body.results[0].status).to.equal(422);
    expect(body.results[1]).to.deepEqual({id: ok, status: 200});
  });

  it('refuses viewers, unknown actions, empty or oversized lists and bad ids', async () => {
    await asUser(given.client, team.viewer)
      .post('/api/schedulers/bulk')
      .send({action: 'pause', ids: [1]})
      .expect(403);
    for (const bad of [
      {action: 'explode', ids: [1]},
      {action: 'pause', ids: []},
      {action: 'pause', ids: Array.from({length: 1001}, (_, i) => i + 1)},
      {action: 'pause', ids: [0]},
      {action: 'pause', ids: ['1']},
      {action: 'pause'},
      {action: 'pause', ids: [1], reason: 'x'.repeat(501)},
    ]) {
      const res = await operator.post('/api/schedulers/bulk').send(bad);
      expect(res.status).to.be.oneOf([400, 422]);
      expect(res.body.error.statusCode).to.equal(res.status);
    }
  });

  it('refuses an id given twice (review: 1,000 copies of one id were 1,000 runs)', async () => {
    const res = await operator
      .post('/api/schedulers/bulk')
      .send({action: 'run', ids: [5, 6, 5]})
      .expect(422);
    expect(res.body.error.details[0]).to.containDeep({
      path: '/ids',
      code: 'uniqueItems',
    });
    expect(await sql(`SELECT id FROM scheduler_execution`)).to.deepEqual([]);
  });
});
