import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/** Issue 27 review: what a hostile operator sends to /api/webhooks. */
describe('Webhooks API under hostile input (issue 27 review)', () => {
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

  async function givenHook(): Promise<{id: number; signing_secret: string}> {
    const res = await asUser(given.client, team.operator)
      .post('/api/webhooks')
      .send({url: 'https://hooks.example.com/x', events: ['run.failed']})
      .expect(201);
    return res.body;
  }

  it('never lets an operator change the owner, the secret or the failure bookkeeping through PATCH', async () => {
    const hook = await givenHook();
    const operator = asUser(given.client, team.operator);
    for (const patch of [
      {user_id: team.admin.id},
      {signing_secret: 'whsec_mine'},
      {previous_signing_secret: 'whsec_mine'},
      {consecutive_failures: -100},
      {id: 4242},
    ]) {
      const res = await operator.patch(`/api/webhooks/${hook.id}`).send(patch);
      expect(res.status).to.be.oneOf([400, 422]);
      expect(res.body.error.statusCode).to.equal(res.status);
    }
    const [row] = await sql<{
      user_id: number;
      signing_secret: string;
      consecutive_failures: number;
    }>(
      `SELECT user_id, signing_secret, consecutive_failures FROM webhook WHERE id = $1`,
      [hook.id],
    );
    expect(row).to.eql({
      user_id: team.operator.id,
      signing_secret: hook.signing_secret,
      consecutive_failures: 0,
    });
  });

  it('answers huge and malformed fields with a 4xx in the uniform body, never a 500', async () => {
    const operator = asUser(given.client, team.operator);
    const hook = await givenHook();
    const bodies: object[] = [
      {
        url: 'https://h.example.com/' + 'a'.repeat(3000),
        events: ['run.failed'],
      },
      {url: 'https://h.example.com/\r\nX: y', events: ['run.failed']},
      {url: 'https://[::1', events: ['run.failed']},
      {
        url: 'https://h.example.com/',
        events: ['run.failed'],
        scheduler_ids: [2 ** 40],
      },
      {
        url: 'https://h.example.com/',
        events: ['run.failed'],
        scheduler_ids: [-1],
      },
      {
        url: 'https://h.example.com/',
        events: ['run.failed'],
        scheduler_ids: ['1'],
      },
      {
        url: 'https://h.example.com/',
        events: ['run.failed'],
        scheduler_ids: Array.from({length: 1001}, (_, i) => i + 1),
      },
      {url: 'https://h.example.com/', events: ['run.failed', 'run.failed']},
      {url: 'https://h.example.com/', events: ['x'.repeat(100_000)]},
      {url: 'https://h.example.com/', events: 'run.failed'},
      {
        url: 'https://h.example.com/',
        events: ['run.failed'],
        description: 'd'.repeat(501),
      },
      {url: 'https://h.example.com/', events: ['run.failed'], active: 'yes'},
    ];
    for (const body of bodies) {
      const created = await operator.post('/api/webhooks').send(body);
      expect({body, status: created.status}).to.containDeep({status: 422});
      const patched = await operator
        .patch(`/api/webhooks/${hook.id}`)
        .send(body);
      expect({body, status: patched.status}).to.containDeep({status: 422});
      expect(patched.body.error.statusCode).to.equal(422);
    }
    for (const path of [
      '/api/webhooks/99999999999999999999/deliveries',
      '/api/webhooks/-1/deliveries',
      `/api/webhooks/${hook.id}/deliveries?limit=100000`,
    ]) {
      const res = await operator.get(path);
      expect({path, status: res.status}).to.containDeep({status: 400});
    }
  });

  // The issue sets no number; without one an operator's every run fans out
  // to as many deliveries as they care to create, inside the transaction
  // that marks the run, and the service floods whatever host they name.
  it('caps the webhooks one owner may have, also against concurrent creates', async () => {
    const cap = 50;
    const operator = asUser(given.client, team.operator);
    const answers = await Promise.all(
      Array.from({length: cap + 10}, (_, i) =>
        operator
          .post('/api/webhooks')
          .send({url: `https://h.example.com/${i}`, events: ['run.failed']}),
      ),
    );
    const statuses = answers.map(res => res.status);
    expect(statuses.filter(status => status === 201)).to.have.length(cap);
    expect(statuses.filter(status => status === 422)).to.have.length(10);
    const refused = answers.find(res => res.status === 422)!;
    expect(refused.body.error.details[0]).to.containDeep({
      code: 'webhooksPerOwnerMax',
    });
    // Someone else's count is their own.
    await asUser(given.client, team.admin)
      .post('/api/webhooks')
      .send({url: 'https://h.example.com/a', events: ['run.failed']})
      .expect(201);
  });

  it('keeps concurrent rotations in one chain and answers concurrent deletes once', async () => {
    const hook = await givenHook();
    const operator = asUser(given.client, team.operator);
    const rotations = await Promise.all(
      Array.from({length: 8}, () =>
        operator.post(`/api/webhooks/${hook.id}/rotate-secret`).send({}),
      ),
    );
    expect(rotations.map(res => res.status)).to.eql(Array(8).fill(200));
    const answered = rotations.map(res => res.body.signing_secret as string);
    expect(new Set(answered).size).to.equal(8);
    const [row] = await sql<{
      signing_secret: string;
      previous_signing_secret: string;
    }>(
      `SELECT signing_secret, previous_signing_secret FROM webhook WHERE id = $1`,
      [hook.id],
    );
    // The last rotation's secret signs, the one before it still does.
    expect(answered).to.containEql(row.signing_secret);
    expect(answered).to.containEql(row.previous_signing_secret);
    const deletes = await Promise.all(
      Array.from({length: 5}, () =>
        operator.delete(`/api/webhooks/${hook.id}`),
      ),
    );
    expect(deletes.map(res => res.status).sort()).to.eql([
      204, 404, 404, 404, 404,
    ]);
  });
});
