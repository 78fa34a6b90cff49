import {expect} from '@loopback/testlab';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {givenCatalog, truncateAll} from '../fixtures/test-database';

const inDays = (days: number) =>
  new Date(Date.now() + days * 24 * 60 * 60 * 1000).toISOString();

/** Issue 27 review: hostile input to HTTP targets and API keys. */
describe('HTTP targets and API keys under hostile input (issue 27 review)', () => {
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

  const target = (overrides: Record<string, unknown>) => ({
    name: 't',
    url: 'https://h.example.com/',
    ...overrides,
  });

  it('answers bad HTTP target fields with a 422 in the uniform body, never echoing a secret', async () => {
    const operator = asUser(given.client, team.operator);
    const secret = 'Bearer do-not-echo-me-123';
    const bodies = [
      target({headers: {'X-A': 'a\r\nInjected: 1'}}),
      target({headers: {'Bad Name': 'x'}}),
      target({headers: {Host: 'internal'}}),
      target({headers: {'webhook-signature': 'v1,forged'}}),
      target({headers: {'X-A': 'x'.repeat(5000)}}),
      target({
        headers: Object.fromEntries(
          Array.from({length: 51}, (_, i) => [`X-${i}`, 'v']),
        ),
      }),
      target({secret_headers: {Authorization: secret, authorization: 'x'}}),
      target({secret_headers: {Authorization: secret + '\n'}}),
      target({url: 'https://h.example.com/' + 'a'.repeat(3000)}),
      target({url: 'file:///etc/passwd'}),
      target({url: 'https://u:p@h.example.com/'}),
      target({method: 'TRACE'}),
      target({timeout_ms: 0}),
      target({timeout_ms: 10 ** 12}),
      target({success_status: '600-700'}),
      target({success_status: 'x'.repeat(300)}),
      target({body: 'b'.repeat(70_000)}),
      target({name: ''}),
    ];
    for (const body of bodies) {
      const res = await operator.post('/api/http-targets').send(body);
      expect({body: Object.keys(body), status: res.status}).to.containDeep({
        status: 422,
      });
      expect(res.body.error.statusCode).to.equal(422);
      expect(res.text).to.not.containEql('do-not-echo-me');
    }
  });

  it('answers bad API key fields with a 422, and a viewer key cannot rise above viewer', async () => {
    const viewer = asUser(given.client, team.viewer);
    for (const body of [
      {name: 'x'.repeat(10_000), expires_at: inDays(1)},
      {name: '', expires_at: inDays(1)},
      {name: 'k', expires_at: 'tomorrow'},
      {name: 'k', expires_at: '275760-09-13T00:00:00.000Z'},
      {name: 'k', expires_at: inDays(1), role: 'root'},
      {name: 'k', expires_at: inDays(1), role: 'operator'},
      {name: 'k', expires_at: inDays(1), user_id: team.admin.id},
    ]) {
      const res = await viewer.post('/api/api-keys').send(body);
      expect({body, status: res.status}).to.containDeep({status: 422});
      expect(res.body.error.statusCode).to.equal(422);
    }
  });
});
