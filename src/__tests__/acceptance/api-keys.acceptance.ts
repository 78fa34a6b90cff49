import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

const inDays = (days: number) =>
  new Date(Date.now() + days * 24 * 60 * 60 * 1000).toISOString();

describe('API keys (issue 27)', () => {
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
    team = await givenTeam(given.app);
    const res = await asUser(given.client, team.operator)
      .post('/api/schedulers')
      .send(givenSchedulerBody())
      .expect(201);
    schedulerId = res.body.id;
  });

  async function givenKey(
    user: {token: string},
    body: Record<string, unknown> = {},
  ): Promise<{id: number; key: string}> {
    const res = await asUser(given.client, user)
      .post('/api/api-keys')
      .send({name: 'deploy pipeline', expires_at: inDays(30), ...body})
      .expect(201);
    return res.body;
  }

  const withKey = (key: string) => asUser(given.client, {token: key});
  const pause = (key: string) =>
    withKey(key).patch(`/api/schedulers/${schedulerId}`).send({status: false});

  it('shows the key once and keeps only its hash', async () => {
    const created = await givenKey(team.viewer);
    expect(created.key).to.match(/^tsk_[A-Za-z0-9_-]{43}$/);
    expect(created).to.containDeep({
      role: 'viewer',
      key_prefix: created.key.slice(0, 8),
    });
    const listed = await asUser(given.client, team.viewer)
      .get('/api/api-keys')
      .expect(200);
    expect(listed.body).to.have.length(1);
    expect(listed.text).to.not.containEql(created.key);
    const [row] = await sql<{key_hash: Buffer}>(`SELECT key_hash FROM api_key`);
    expect(row.key_hash).to.have.length(32);
    expect(
      JSON.stringify(await sql('SELECT * FROM audit_event')),
    ).to.not.containEql(created.key);
    expect(given.logs.lines.join('\n')).to.not.containEql(created.key);
  });

  it('lets a viewer key read but not pause', async () => {
    const {key} = await givenKey(team.viewer);
    await withKey(key).get('/api/schedulers').expect(200);
    const refused = await pause(key).expect(403);
    expect(refused.body.error.name).to.equal('ForbiddenError');
    const [row] = await sql<{last_used_at: Date | null}>(
      'SELECT last_used_at FROM api_key',
    );
    expect(row.last_used_at).to.be.instanceOf(Date);
  });

  it('takes the Bearer scheme in any case, as RFC 7235 says (review: "bearer" was a 401), for keys and tokens', async () => {
    const {key} = await givenKey(team.viewer);
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      await given.client
        .get('/api/schedulers')
        .set('Authorization', `${scheme} ${key}`)
        .expect(200);
      await given.client
        .get('/api/schedulers')
        .set('Authorization', `${scheme} ${team.viewer.token}`)
        .expect(200);
    }
    // The key's own prefix is not a scheme: it stays case-sensitive.
    await given.client
      .get('/api/schedulers')
      .set('Authorization', `Bearer TSK_${key.slice(4)}`)
      .expect(401);
  });

  it('lets an operator key pause, and shrinks it when its owner is demoted', async () => {
    const {key} = await givenKey(team.operator);
    await pause(key).expect(200);
    await sql(`UPDATE app_user SET role = 'viewer' WHERE id = $1`, [
      team.operator.id,
    ]);
    await pause(key).expect(403);
    await withKey(key).get('/api/schedulers').expect(200);
  });

  it('answers 401 to an expired, revoked or hand-made key and to a deactivated owner', async () => {
    const expired = await givenKey(team.operator);
    await sql(
      `UPDATE api_key SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [expired.id],
    );
    const revoked = await givenKey(team.operator);
    await asUser(given.client, team.operator)
      .delete(`/api/api-keys/${revoked.id}`)
      .expect(204);
    const ownerGone = await givenKey(team.viewer);
    await sql(`UPDATE app_user SET active = false WHERE id = $1`, [
      team.viewer.id,
    ]);
    const handMade = 'tsk_' + 'A'.repeat(43);
    for (const key of [
      expired.key,
      revoked.key,
      ownerGone.key,
      handMade,
      'tsk_short',
    ]) {
      const res = await withKey(key).get('/api/schedulers').expect(401);
      expect(res.body.error.name).to.equal('UnauthorizedError');
      expect(res.body.error.message).to.equal(
        'Invalid, expired or revoked API key',
      );
    }
    const events = await sql<{action: string; entity: string}>(
      `SELECT action, entity FROM audit_event WHERE entity = 'api-key' ORDER BY id`,
    );
    expect(events.map(e => e.action)).to.eql([
      'create',
      'create',
      'revoke',
      'create',
      'refused',
      'refused',
      'refused',
      'refused',
      'refused',
    ]);
  });

  it('refuses a role above the owner, a life past a year and keys minting keys', async () => {
    const operator = asUser(given.client, team.operator);
    const tooHigh = await operator
      .post('/api/api-keys')
      .send({name: 'x', expires_at: inDays(30), role: 'admin'})
      .expect(422);
    expect(tooHigh.body.error.details[0].code).to.equal('roleTooHigh');
    const tooLong = await operator
      .post('/api/api-keys')
      .send({name: 'x', expires_at: inDays(400)})
      .expect(422);
    expect(tooLong.body.error.details[0].code).to.equal('tooLong');
    await operator
      .post('/api/api-keys')
      .send({name: 'x', expires_at: inDays(-1)})
      .expect(422);
    const {key} = await givenKey(team.operator);
    await withKey(key)
      .post('/api/api-keys')
      .send({name: 'y', expires_at: inDays(1)})
      .expect(401);
  });

  it('lets only the owner or an admin revoke a key', async () => {
    const {id} = await givenKey(team.viewer);
    await asUser(given.client, team.operator)
      .delete(`/api/api-keys/${id}`)
      .expect(404);
    await asUser(given.client, team.admin)
      .delete(`/api/api-keys/${id}`)
      .expect(204);
  });

  it('documents the key as a second security scheme beside the bearer token', async () => {
    const spec = (await given.client.get('/api/openapi.json').expect(200)).body;
    expect(spec.components.securitySchemes.apiKeyAuth).to.containDeep({
      type: 'http',
      scheme: 'bearer',
    });
    expect(spec.paths['/schedulers'].get.security).to.eql([
      {bearerAuth: []},
      {apiKeyAuth: []},
    ]);
    expect(spec.paths['/api-keys'].post.security).to.eql([{bearerAuth: []}]);
  });
});
