import {expect} from '@loopback/testlab';
import {withoutRequestId} from '../fixtures/error-body';
import {
  asUser,
  givenTeam,
  givenUser,
  Team,
  TestUser,
} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('Webhooks API (issue 27, item 3)', () => {
  let given: TestApp;
  let team: Team;
  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
  });

  const hookBody = (overrides: Record<string, unknown> = {}) => ({
    url: 'https://hooks.example.com/scheduler?token=abc',
    events: ['run.failed', 'run.parked', 'scheduler.created'],
    ...overrides,
  });

  async function givenScheduler(owner: TestUser): Promise<number> {
    const res = await asUser(given.client, owner)
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({reminder_id: 1, report_id: undefined, params: {}}),
      )
      .expect(201);
    return res.body.id;
  }

  async function givenHook(
    owner: TestUser,
    overrides: Record<string, unknown> = {},
  ): Promise<Record<string, unknown>> {
    const res = await asUser(given.client, owner)
      .post('/api/webhooks')
      .send(hookBody(overrides))
      .expect(201);
    return res.body;
  }

  it('shows the signing secret once, on creation, and never again nor in logs', async () => {
    const created = await givenHook(team.operator);
    expect(created.signing_secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created).to.containDeep({
      user_id: team.operator.id,
      active: true,
      scheduler_ids: [],
      consecutive_failures: 0,
    });
    const rotated = await asUser(given.client, team.operator)
      .post(`/api/webhooks/${created.id}/rotate-secret`)
      .send({rotation_window_minutes: 60})
      .expect(200);
    expect(rotated.body.signing_secret).to.match(/^whsec_/);
    expect(rotated.body.signing_secret).to.not.equal(created.signing_secret);
    const read = await asUser(given.client, team.operator)
      .get(`/api/webhooks/${created.id}`)
      .expect(200);
    expect(read.body.previous_secret_expires_at).to.be.a.String();
    const listed = await asUser(given.client, team.admin)
      .get('/api/webhooks')
      .expect(200);
    const audit = await asUser(given.client, team.admin)
      .get('/api/audit-events')
      .expect(200);
    for (const text of [read.text, listed.text, audit.text]) {
      expect(text).to.not.containEql(created.signing_secret as string);
      expect(text).to.not.containEql(rotated.body.signing_secret);
    }
    expect(read.body).to.not.have.property('signing_secret');
    expect(read.body).to.not.have.property('previous_signing_secret');
    const logs = given.logs.lines.join('\n');
    expect(logs).to.not.containEql(created.signing_secret as string);
    expect(logs).to.not.containEql(rotated.body.signing_secret);
  });

  it("keeps operators away from other people's webhooks; admins see all", async () => {
    const other = await givenUser(given.app, 'operator');
    const mine = await givenHook(team.operator);
    const theirs = await givenHook(other);
    const operator = asUser(given.client, team.operator);
    const list = await operator.get('/api/webhooks').expect(200);
    expect(list.body.map((hook: {id: number}) => hook.id)).to.eql([mine.id]);
    await operator.get(`/api/webhooks/${theirs.id}`).expect(404);
    await operator
      .patch(`/api/webhooks/${theirs.id}`)
      .send({events: ['run.failed']})
      .expect(404);
    await operator.delete(`/api/webhooks/${theirs.id}`).expect(404);
    await operator.get(`/api/webhooks/${theirs.id}/deliveries`).expect(404);
    await operator.post(`/api/webhooks/${theirs.id}/test`).expect(404);
    await operator
      .post(`/api/webhooks/${theirs.id}/rotate-secret`)
      .send({})
      .expect(404);
    const all = await asUser(given.client, team.admin)
      .get('/api/webhooks')
      .expect(200);
    expect(all.body.map((hook: {id: number}) => hook.id).sort()).to.eql(
      [mine.id, theirs.id].sort(),
    );
    await asUser(given.client, team.viewer).get('/api/webhooks').expect(403);
    await asUser(given.client, team.viewer)
      .post('/api/webhooks')
      .send(hookBody())
      .expect(403);
  });

  it('lets operators subscribe only to schedulers they own', async () => {
    const own = await givenScheduler(team.operator);
    const foreign = await givenScheduler(team.admin);
    const refused = await asUser(given.client, team.operator)
      .post('/api/webhooks')
      .send(hookBody({scheduler_ids: [own, foreign, 99999]}))
      .expect(422);
    expect(withoutRequestId(refused)).to.containDeep({
      error: {
        statusCode: 422,
        details: [
          {path: '/scheduler_ids/1', code: 'notOwner'},
          {path: '/scheduler_ids/2', code: 'notFound'},
        ],
      },
    });
    const hook = await givenHook(team.operator, {scheduler_ids: [own]});
    await asUser(given.client, team.operator)
      .patch(`/api/webhooks/${hook.id}`)
      .send({scheduler_ids: [foreign]})
      .expect(422);
    await givenHook(team.admin, {scheduler_ids: [own, foreign]});
  });

  it('answers bad input with 422 or 400 in the uniform body', async () => {
    const operator = asUser(given.client, team.operator);
    for (const body of [
      hookBody({events: ['run.exploded']}),
      hookBody({events: []}),
      hookBody({url: 'ftp://example.com/'}),
      hookBody({url: 'not a url'}),
      hookBody({url: 'https://user:pass@hooks.example.com/'}),
      hookBody({signing_secret: 'whsec_mine'}),
      hookBody({user_id: team.admin.id}),
      {events: ['run.failed']},
    ]) {
      const res = await operator.post('/api/webhooks').send(body).expect(422);
      expect(res.body.error).to.containDeep({statusCode: 422});
      expect(res.body.error.request_id).to.equal(res.headers['x-request-id']);
    }
    const malformed = await operator
      .post('/api/webhooks')
      .set('content-type', 'application/json')
      .send('{"url": ')
      .expect(400);
    expect(malformed.body.error).to.containDeep({statusCode: 400});
    await operator.get('/api/webhooks/abc/deliveries').expect(400);
    await operator.get('/api/webhooks/1/deliveries?limit=0').expect(400);
  });

  it('writes scheduler events to the outbox in the transaction of the write, and a ping on demand', async () => {
    const hook = await givenHook(team.operator);
    const schedulerId = await givenScheduler(team.operator);
    const ping = await asUser(given.client, team.operator)
      .post(`/api/webhooks/${hook.id}/test`)
      .expect(202);
    expect(ping.body).to.containDeep({
      event: 'ping',
      status: 'pending',
      attempts: 0,
    });
    const log = await asUser(given.client, team.operator)
      .get(`/api/webhooks/${hook.id}/deliveries`)
      .expect(200);
    expect(log.body).to.containDeep([
      {event: 'ping', payload: {type: 'ping', data: {webhook_id: hook.id}}},
      {
        event: 'scheduler.created',
        status: 'pending',
        attempts: 0,
        payload: {type: 'scheduler.created', data: {scheduler_id: schedulerId}},
      },
    ]);
    // A refused write raises nothing: the event shares its transaction.
    await asUser(given.client, team.operator)
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({
          schedule: 'not cron',
          reminder_id: 1,
          report_id: undefined,
        }),
      )
      .expect(422);
    const [{count}] = await sql<{count: string}>(
      `SELECT count(*) FROM webhook_delivery WHERE event = 'scheduler.created'`,
    );
    expect(Number(count)).to.equal(1);
  });

  it('re-enables a disabled endpoint when active is set true again', async () => {
    const hook = await givenHook(team.operator);
    await sql(
      `UPDATE webhook SET active = false, disabled_at = now(),
              disabled_reason = 'the endpoint answered 410 Gone', consecutive_failures = 3
        WHERE id = $1`,
      [hook.id],
    );
    const res = await asUser(given.client, team.operator)
      .patch(`/api/webhooks/${hook.id}`)
      .send({active: true})
      .expect(200);
    expect(res.body).to.containDeep({
      active: true,
      disabled_at: null,
      disabled_reason: null,
      consecutive_failures: 0,
    });
  });

  it('documents the event bodies in the OpenAPI document', async () => {
    const res = await given.client.get('/api/openapi.json').expect(200);
    const schemas = res.body.components.schemas;
    expect(schemas.WebhookEventBody.oneOf).to.have.length(5);
    expect(schemas.WebhookRunEvent.properties.type.enum).to.eql([
      'run.succeeded',
      'run.failed',
      'run.skipped',
    ]);
    expect(schemas.Webhook.properties.events.items.enum).to.containEql(
      'notice.missed_runs',
    );
  });
});
