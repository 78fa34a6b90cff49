import {expect} from '@loopback/testlab';
import {AuthBindings} from '../../keys';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {asUser, givenTeam, Team, TEST_PASSWORD} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('identity hardening (issue 20)', () => {
  let given: TestApp;
  let team: Team;
  let now = new Date('2026-11-24T10:00:00Z');
  const advance = (seconds: number) =>
    (now = new Date(now.getTime() + seconds * 1000));

  before(async () => {
    given = await givenRunningApp(
      {trustProxy: true, corsOrigins: ['https://console.example.com']},
      app => app.bind(AuthBindings.CLOCK).to(() => now),
    );
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    // Past any lock an earlier test left (the app keeps a copy of locks it saw).
    advance(16 * 60);
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
  });

  const login = (email: string, password: string, from = '203.0.113.7') =>
    given.client
      .post('/api/auth/login')
      .set('X-Forwarded-For', from)
      .send({email, password});

  describe('login throttling', () => {
    it('locks an account after 5 failures with a Retry-After that grows, then lets it in after the lock', async () => {
      const email = team.operator.email;
      for (let i = 0; i < 5; i++)
        await login(email, 'wrong-password!').expect(401);
      const waits: number[] = [];
      for (let round = 0; round < 3; round++) {
        const refused = await login(email, 'wrong-password!').expect(429);
        expect(refused.body.error).to.containDeep({statusCode: 429});
        waits.push(Number(refused.headers['retry-after']));
        // Even the right password is refused while locked.
        await login(email, TEST_PASSWORD).expect(429);
        advance(waits[round] + 1);
        await login(email, 'wrong-password!').expect(401);
      }
      expect(waits).to.deepEqual([1, 2, 4]);
      const last = await login(email, 'wrong-password!').expect(429);
      advance(Number(last.headers['retry-after']) + 1);
      await login(email, TEST_PASSWORD).expect(200);
      // A success resets the account's count: the next failure is a plain 401.
      await login(email, 'wrong-password!').expect(401);
    });

    it('checks no more passwords for a burst of parallel guesses than for the same guesses one at a time (review: 15 of 15 were checked)', async () => {
      const email = team.operator.email;
      const answers = await Promise.all(
        Array.from({length: 15}, (_, i) =>
          login(email, `parallel-guess-${i}`).then(res => res.status),
        ),
      );
      expect(answers.filter(status => status === 401)).to.have.length(5);
      expect(answers.filter(status => status === 429)).to.have.length(10);
      expect(
        await sql(`SELECT failures FROM login_throttle WHERE key = $1`, [
          `account:${email}`,
        ]),
      ).to.deepEqual([{failures: 5}]);
      // Still locked for the right password; in after the lock.
      await login(email, TEST_PASSWORD).expect(429);
      advance(2);
      await login(email, TEST_PASSWORD).expect(200);
      // The success cleared the count: four failures in a row lock nothing.
      for (let i = 0; i < 4; i++)
        await login(email, 'wrong-password!').expect(401);
    });

    it('throttles guesses of the current password on a password change like sign-ins (review: unlimited with a token)', async () => {
      const viewer = asUser(given.client, team.viewer);
      const change = (current: string) =>
        viewer
          .patch('/api/users/me/password')
          .set('X-Forwarded-For', '203.0.113.8')
          .send({
            current_password: current,
            new_password: 'Another-good-pass-99',
          });
      const answers = await Promise.all(
        Array.from({length: 12}, (_, i) =>
          change(`guess-${i}-xx`).then(res => res.status),
        ),
      );
      expect(answers.filter(status => status === 401)).to.have.length(5);
      expect(answers.filter(status => status === 429)).to.have.length(7);
      // The right password waits for the lock too; a sign-in does not.
      const refused = await change(TEST_PASSWORD).expect(429);
      expect(Number(refused.headers['retry-after'])).to.be.greaterThan(0);
      await login(team.viewer.email, TEST_PASSWORD).expect(200);
      const events = await sql<{action: string; changes: object}>(
        `SELECT action, changes FROM audit_event WHERE entity = 'user' ORDER BY id`,
      );
      // Side by side: one of the five failures is the one that locks.
      expect(events.map(e => e.action).sort()).to.deepEqual([
        'password.change_failed',
        'password.change_failed',
        'password.change_failed',
        'password.change_failed',
        'password.change_locked',
      ]);
      expect(JSON.stringify(events)).to.not.match(/guess-/);
      advance(2);
      await change(TEST_PASSWORD).expect(204);
      // The success cleared the count: four failures in a row lock nothing.
      const {token} = (
        await login(team.viewer.email, 'Another-good-pass-99').expect(200)
      ).body;
      for (let i = 0; i < 4; i++) {
        await asUser(given.client, {token})
          .patch('/api/users/me/password')
          .send({
            current_password: 'wrong-again',
            new_password: 'Third-pass-99x',
          })
          .expect(401);
      }
    });

    it('lets ten parallel sign-ins with the right password all in (review: five were 429)', async () => {
      const answers = await Promise.all(
        Array.from({length: 10}, () =>
          login(team.operator.email, TEST_PASSWORD).then(res => res.status),
        ),
      );
      expect(answers).to.deepEqual(Array.from({length: 10}, () => 200));
    });

    it("keeps nobody's failed sign-ins from blocking a password change (review: an attacker kept the victim from changing it)", async () => {
      for (let i = 0; i < 8; i++) {
        await login(team.viewer.email, `attacker-${i}`, '198.51.100.66');
      }
      await login(team.viewer.email, TEST_PASSWORD).expect(429);
      await asUser(given.client, team.viewer)
        .patch('/api/users/me/password')
        .set('X-Forwarded-For', '198.51.100.66')
        .send({
          current_password: TEST_PASSWORD,
          new_password: 'Another-good-pass-99',
        })
        .expect(204);
    });

    it('refuses a locked account on every replica, also one that never saw the lock', async () => {
      const other = await givenRunningApp({trustProxy: true}, app =>
        app.bind(AuthBindings.CLOCK).to(() => now),
      );
      try {
        for (let i = 0; i < 5; i++) {
          await login(team.admin.email, 'wrong-password!').expect(401);
        }
        const res = await other.client
          .post('/api/auth/login')
          .set('X-Forwarded-For', '192.0.2.50')
          .send({email: team.admin.email, password: TEST_PASSWORD})
          .expect(429);
        expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
      } finally {
        await other.app.stop();
      }
    });

    it('locks one account attacked from many addresses', async () => {
      for (let i = 0; i < 5; i++) {
        await login(
          team.viewer.email,
          'nope-nope-nope',
          `198.51.100.${i}`,
        ).expect(401);
      }
      await login(team.viewer.email, 'nope-nope-nope', '198.51.100.99').expect(
        429,
      );
    });

    it('locks one address trying many accounts, and answers an unknown e-mail like a wrong password', async () => {
      const unknown = await login('nobody@example.com', 'whatever-1234').expect(
        401,
      );
      const wrong = await login(team.admin.email, 'whatever-1234').expect(401);
      expect(unknown.body.error.message).to.equal(wrong.body.error.message);
      for (let i = 0; i < 18; i++) {
        await login(`guess${i}@example.com`, 'whatever-1234').expect(401);
      }
      await login('another@example.com', 'whatever-1234').expect(429);
      // Refused before the body is even read: a locked address costs nothing.
      const early = await given.client
        .post('/api/auth/login')
        .set('X-Forwarded-For', '203.0.113.7')
        .set('Content-Type', 'application/json')
        .send('{not json')
        .expect(429);
      expect(early.body.error).to.containDeep({
        statusCode: 429,
        name: 'TooManyRequestsError',
      });
      expect(Number(early.headers['retry-after'])).to.be.greaterThan(0);
      // Another address is not held back.
      await login(team.admin.email, TEST_PASSWORD, '192.0.2.1').expect(200);
    });

    it('forgets failures after a day, and deletes their rows now and then', async () => {
      await login('someone@example.com', 'whatever-1234').expect(401);
      expect(await sql(`SELECT key FROM login_throttle`)).to.have.length(2);
      advance(25 * 60 * 60);
      // The next failure (another key) prunes the forgotten ones.
      await login('other@example.com', 'whatever-1234', '192.0.2.9').expect(
        401,
      );
      const keys = await sql<{key: string}>(
        `SELECT key FROM login_throttle ORDER BY key`,
      );
      expect(keys.map(k => k.key)).to.deepEqual([
        'account:other@example.com',
        'address:192.0.2.9',
      ]);
    });

    it('records sign-in events without passwords', async () => {
      await login(team.admin.email, TEST_PASSWORD).expect(200);
      await login(team.admin.email, 'wrong-password!').expect(401);
      const events = await sql<{action: string; changes: object}>(
        `SELECT action, changes FROM audit_event WHERE entity = 'session' ORDER BY id`,
      );
      expect(events.map(e => e.action)).to.deepEqual([
        'login.succeeded',
        'login.failed',
      ]);
      expect(JSON.stringify(events)).to.not.match(
        new RegExp(`${TEST_PASSWORD}|wrong-password`),
      );
      // Admins (and operators) read them through the API, newest first.
      const {body: listed} = await asUser(given.client, team.admin)
        .get('/api/audit-events')
        .expect(200);
      expect(listed.map((e: {action: string}) => e.action)).to.deepEqual([
        'login.failed',
        'login.succeeded',
      ]);
      expect(listed[1]).to.containDeep({
        actor_user_id: team.admin.id,
        entity: 'session',
      });
      await asUser(given.client, team.viewer)
        .get('/api/audit-events')
        .expect(403);
      await asUser(given.client, team.admin)
        .post('/api/audit-events')
        .send({action: 'forged', entity: 'x'})
        .expect(404);
    });
  });

  describe('token revocation', () => {
    it('refuses a token issued before a password change, and accepts the next one', async () => {
      const old = (await login(team.operator.email, TEST_PASSWORD).expect(200))
        .body.token;
      await asUser(given.client, {token: old})
        .patch('/api/users/me/password')
        .send({
          current_password: TEST_PASSWORD,
          new_password: 'a-new-long-secret-phrase',
        })
        .expect(204);
      await asUser(given.client, {token: old})
        .get('/api/schedulers')
        .expect(401);
      const fresh = (
        await login(team.operator.email, 'a-new-long-secret-phrase').expect(200)
      ).body.token;
      await asUser(given.client, {token: fresh})
        .get('/api/schedulers')
        .expect(200);
    });

    it('refuses a token after its user was demoted by an admin', async () => {
      const token = (
        await login(team.operator.email, TEST_PASSWORD).expect(200)
      ).body.token;
      await asUser(given.client, team.admin)
        .patch(`/api/users/${team.operator.id}`)
        .send({role: 'viewer'})
        .expect(200);
      await asUser(given.client, {token}).get('/api/schedulers').expect(401);
    });

    it('logout revokes the presented token only; logout-all revokes every token', async () => {
      const first = (await login(team.viewer.email, TEST_PASSWORD).expect(200))
        .body.token;
      const second = (await login(team.viewer.email, TEST_PASSWORD).expect(200))
        .body.token;
      await asUser(given.client, {token: first})
        .post('/api/auth/logout')
        .expect(204);
      await asUser(given.client, {token: first})
        .get('/api/schedulers')
        .expect(401);
      await asUser(given.client, {token: second})
        .get('/api/schedulers')
        .expect(200);
      await asUser(given.client, {token: second})
        .post('/api/auth/logout-all')
        .send({user_id: team.admin.id})
        .expect(403);
      await asUser(given.client, team.admin)
        .post('/api/auth/logout-all')
        .send({user_id: team.viewer.id})
        .expect(204);
      await asUser(given.client, {token: second})
        .get('/api/schedulers')
        .expect(401);
      const actions = await sql<{action: string}>(
        `SELECT action FROM audit_event WHERE action IN ('logout', 'tokens.revoked') ORDER BY id`,
      );
      expect(actions.map(a => a.action)).to.deepEqual([
        'logout',
        'tokens.revoked',
      ]);
    });
  });

  describe('password rules', () => {
    it('refuses short and common passwords with 422 naming the rule', async () => {
      const admin = asUser(given.client, team.admin);
      const user = (password: string) => ({
        email: `new-${Math.random().toString(36).slice(2)}@example.com`,
        name: 'New',
        role: 'viewer',
        password,
      });
      const short = await admin
        .post('/api/users')
        .send(user('short-pw-1'))
        .expect(422);
      expect(JSON.stringify(short.body.error)).to.match(/12 characters/);
      const common = await admin
        .post('/api/users')
        .send(user('Password1234'))
        .expect(422);
      expect(common.body.error.details[0]).to.containDeep({
        path: '/password',
        code: 'passwordCommon',
      });
      await admin
        .post('/api/users')
        .send(user('a-long-unusual-phrase'))
        .expect(201);
      await asUser(given.client, team.viewer)
        .patch('/api/users/me/password')
        .send({
          current_password: 'not-my-password',
          new_password: 'a-long-unusual-phrase',
        })
        .expect(401);
      const weak = await asUser(given.client, team.viewer)
        .patch('/api/users/me/password')
        .send({
          current_password: TEST_PASSWORD,
          new_password: 'aaaaaaaaaaaaaaa',
        })
        .expect(422);
      expect(weak.body.error.details[0].code).to.equal('passwordCommon');
    });
  });

  describe('HTTP headers and CORS', () => {
    it('sends the security headers on the API, the landing page, the explorer and the OpenAPI document', async () => {
      for (const path of [
        '/api/ping',
        '/',
        '/api/explorer/',
        '/api/openapi.json',
      ]) {
        const res = await given.client.get(path);
        expect(res.headers['x-content-type-options']).to.equal('nosniff');
        expect(res.headers['referrer-policy']).to.equal('no-referrer');
        expect(res.headers['x-frame-options']).to.equal('DENY');
        expect(res.headers['content-security-policy']).to.match(
          /frame-ancestors 'none'/,
        );
        // TRUST_PROXY is on in this app: HSTS is sent.
        expect(res.headers['strict-transport-security']).to.match(/max-age=/);
      }
      const api = await given.client.get('/api/ping');
      expect(api.headers['content-security-policy']).to.match(
        /script-src 'self'(;|$)/,
      );
      const explorer = await given.client.get('/api/explorer/');
      expect(explorer.headers['content-security-policy']).to.match(
        /script-src 'self' 'unsafe-inline'/,
      );
      // Only the explorer itself, not every path that starts like it.
      const lookalike = await given.client.get('/api/explorerx');
      expect(lookalike.headers['content-security-policy']).to.match(
        /script-src 'self'(;|$)/,
      );
    });

    it('allows a listed origin, refuses another, and answers a preflight', async () => {
      const listed = await given.client
        .get('/api/ping')
        .set('Origin', 'https://console.example.com');
      expect(listed.headers['access-control-allow-origin']).to.equal(
        'https://console.example.com',
      );
      const other = await given.client
        .get('/api/ping')
        .set('Origin', 'https://evil.example.net');
      expect(other.headers['access-control-allow-origin']).to.be.undefined();
      const preflight = await given.client
        .options('/api/schedulers')
        .set('Origin', 'https://console.example.com')
        .set('Access-Control-Request-Method', 'PATCH')
        .set('Access-Control-Request-Headers', 'Authorization, Content-Type');
      expect(preflight.status).to.equal(204);
      expect(preflight.headers['access-control-allow-methods']).to.match(
        /PATCH/,
      );
      expect(preflight.headers['access-control-allow-headers']).to.match(
        /Authorization/,
      );
    });
  });
});
