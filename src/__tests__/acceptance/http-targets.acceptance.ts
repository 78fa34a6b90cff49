import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

const CREDENTIAL = 'Bearer never-show-this-token';

describe('HTTP targets API (issue 27)', () => {
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

  const targetBody = (overrides: Record<string, unknown> = {}) => ({
    name: 'Nightly sync',
    url: 'https://hooks.example.com/sync?x=1',
    headers: {Authorization: CREDENTIAL, 'X-Team': 'ops'},
    secret_headers: {'X-Api-Key': 'key-never-shown'},
    body: '{"day": "{{today}}"}',
    ...overrides,
  });

  async function givenTarget(): Promise<Record<string, unknown>> {
    const res = await asUser(given.client, team.operator)
      .post('/api/http-targets')
      .send(targetBody())
      .expect(201);
    return res.body;
  }

  it('shows the signing secret once, on creation, and never a credential header value', async () => {
    const created = await givenTarget();
    expect(created.signing_secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created).to.containDeep({
      method: 'POST',
      timeout_ms: 30000,
      success_status: '200-299',
      headers: {'X-Team': 'ops'},
      secret_header_names: ['Authorization', 'X-Api-Key'],
    });
    const read = await asUser(given.client, team.viewer)
      .get(`/api/http-targets/${created.id}`)
      .expect(200);
    const listed = await asUser(given.client, team.admin)
      .get('/api/http-targets')
      .expect(200);
    const audit = await asUser(given.client, team.admin)
      .get('/api/audit-events')
      .expect(200);
    for (const text of [read.text, listed.text, audit.text]) {
      expect(text).to.not.containEql('never-show-this-token');
      expect(text).to.not.containEql('key-never-shown');
      expect(text).to.not.containEql(created.signing_secret as string);
    }
    expect(read.body).to.not.have.property('signing_secret');
    expect(read.body).to.not.have.property('secret_headers');
    const logs = given.logs.lines.join('\n');
    expect(logs).to.not.containEql('never-show-this-token');
    expect(logs).to.not.containEql('key-never-shown');
  });

  it('keeps a credential given later in headers write-only, beside the others', async () => {
    const created = await givenTarget();
    const patched = await asUser(given.client, team.operator)
      .patch(`/api/http-targets/${created.id}`)
      .send({headers: {'Proxy-Authorization': 'Basic cHJveHk='}})
      .expect(200);
    expect(patched.body.headers).to.eql({});
    expect(patched.body.secret_header_names).to.eql([
      'Authorization',
      'Proxy-Authorization',
      'X-Api-Key',
    ]);
    expect(patched.text).to.not.containEql('cHJveHk=');
  });

  it('replaces a stored credential sent again in headers in another case (review: a 422 "given twice")', async () => {
    const created = await givenTarget();
    const patched = await asUser(given.client, team.operator)
      .patch(`/api/http-targets/${created.id}`)
      .send({headers: {authorization: 'Bearer replaced-token'}})
      .expect(200);
    expect(patched.body.secret_header_names).to.eql([
      'X-Api-Key',
      'authorization',
    ]);
    const [row] = await sql<{secret_headers: Record<string, string>}>(
      `SELECT secret_headers FROM http_target WHERE id = $1`,
      [created.id],
    );
    expect(row.secret_headers).to.eql({
      'X-Api-Key': 'key-never-shown',
      authorization: 'Bearer replaced-token',
    });
    // Given twice in one request it is still the caller's mistake.
    await asUser(given.client, team.operator)
      .patch(`/api/http-targets/${created.id}`)
      .send({
        headers: {authorization: 'a'},
        secret_headers: {Authorization: 'b'},
      })
      .expect(422);
  });

  it('rotates the secret: a new one, shown once, the old one signing until the window ends', async () => {
    const created = await givenTarget();
    const rotated = await asUser(given.client, team.operator)
      .post(`/api/http-targets/${created.id}/rotate-secret`)
      .send({rotation_window_minutes: 60})
      .expect(200);
    expect(rotated.body.signing_secret).to.match(/^whsec_/);
    expect(rotated.body.signing_secret).to.not.equal(created.signing_secret);
    const [row] = await sql<Record<string, unknown>>(
      `SELECT signing_secret, previous_signing_secret,
              previous_secret_expires_at > now() + interval '59 minutes' AS window_open
         FROM http_target WHERE id = $1`,
      [created.id],
    );
    expect(row).to.eql({
      signing_secret: rotated.body.signing_secret,
      previous_signing_secret: created.signing_secret,
      window_open: true,
    });
    const [event] = await sql<{changes: object}>(
      `SELECT changes FROM audit_event WHERE action = 'rotate-secret'`,
    );
    expect(JSON.stringify(event.changes)).to.not.containEql(
      rotated.body.signing_secret,
    );
    await asUser(given.client, team.operator)
      .post('/api/http-targets/999/rotate-secret')
      .expect(404);
  });

  it('lets viewers read but not write', async () => {
    const created = await givenTarget();
    const viewer = asUser(given.client, team.viewer);
    await viewer.post('/api/http-targets').send(targetBody()).expect(403);
    await viewer
      .post(`/api/http-targets/${created.id}/rotate-secret`)
      .expect(403);
    await viewer
      .patch(`/api/http-targets/${created.id}`)
      .send({name: 'x'})
      .expect(403);
    await viewer.delete(`/api/http-targets/${created.id}`).expect(403);
  });

  it('refuses bad targets with 422', async () => {
    const operator = asUser(given.client, team.operator);
    for (const [overrides, code] of [
      [{url: 'ftp://files.example.com/x'}, undefined],
      [{url: 'https://user:pass@example.com/'}, 'credentials'],
      [{url: 'not a url'}, undefined],
      [{method: 'TRACE'}, undefined],
      [{timeout_ms: 10 * 60 * 1000 + 1}, undefined],
      [{success_status: '299-200'}, 'successStatus'],
      [{success_status: '2xx'}, undefined],
      [{headers: {Host: 'evil.example'}}, 'reservedHeader'],
      [{headers: {'webhook-signature': 'v1,x'}}, 'reservedHeader'],
      [{headers: {'bad name': 'x'}}, 'headerName'],
      [{headers: {'X-A': 'line\r\nbreak'}}, undefined],
      [
        {headers: {'x-a': '1'}, secret_headers: {'X-A': '2'}},
        'duplicateHeader',
      ],
      [{signing_secret: 'whsec_mine'}, undefined],
    ] as Array<[Record<string, unknown>, string | undefined]>) {
      const res = await operator
        .post('/api/http-targets')
        .send(targetBody(overrides))
        .expect(422);
      if (code) {
        expect(
          res.body.error.details.map((d: {code: string}) => d.code),
        ).to.containEql(code);
      }
    }
    const [{count}] = await sql<{count: string}>(
      'SELECT count(*) FROM http_target',
    );
    expect(count).to.equal('0');
  });

  it('lets a scheduler call a target: exactly one task kind, and the target kept while used', async () => {
    const created = await givenTarget();
    const operator = asUser(given.client, team.operator);
    const scheduler = await operator
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({
          report_id: undefined,
          params: {},
          http_target_id: created.id,
        }),
      )
      .expect(201);
    expect(scheduler.body.http_target_id).to.equal(created.id);
    const both = await operator
      .post('/api/schedulers')
      .send(givenSchedulerBody({http_target_id: created.id}))
      .expect(422);
    expect(both.body.error.details[0].message).to.match(
      /exactly one of report_id, worker_id, reminder_id, http_target_id is allowed/,
    );
    const missing = await operator
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({
          report_id: undefined,
          params: {},
          http_target_id: 999,
        }),
      )
      .expect(422);
    expect(missing.body.error.details[0].message).to.equal(
      'HttpTarget 999 does not exist',
    );
    await operator.delete(`/api/http-targets/${created.id}`).expect(422);
    await operator.delete(`/api/schedulers/${scheduler.body.id}`).expect(204);
    await operator.delete(`/api/http-targets/${created.id}`).expect(204);
  });
});
