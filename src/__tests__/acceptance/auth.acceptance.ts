import {expect} from '@loopback/testlab';
import {withoutRequestId} from '../fixtures/error-body';
import jwt from 'jsonwebtoken';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {eventually} from '../fixtures/test-consumer';
import {asUser, givenUser, TEST_PASSWORD, TestUser} from '../fixtures/security';
import {
  sql,
  truncateAll,
  withClient,
  TEST_DATABASE_URL,
} from '../fixtures/test-database';

const base64url = (value: object) =>
  Buffer.from(JSON.stringify(value)).toString('base64url');

describe('authentication', () => {
  let given: TestApp;
  let viewer: TestUser;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    viewer = await givenUser(given.app, 'viewer', {
      email: 'viewer@example.com',
    });
  });

  describe('POST /api/auth/login', () => {
    it('answers 200 with a bearer token that opens the API', async () => {
      const before = Date.now();
      const res = await given.client
        .post('/api/auth/login')
        .send({email: 'viewer@example.com', password: TEST_PASSWORD})
        .expect(200);
      expect(Object.keys(res.body).sort()).to.deepEqual([
        'expires_at',
        'token',
      ]);
      const expiresIn = Date.parse(res.body.expires_at) - before;
      expect(expiresIn).to.be.within(3590_000, 3610_000);
      await asUser(given.client, res.body).get('/api/schedulers').expect(200);
    });

    it('matches the e-mail case-insensitively', async () => {
      await given.client
        .post('/api/auth/login')
        .send({email: ' Viewer@Example.COM', password: TEST_PASSWORD})
        .expect(200);
    });

    it('answers a wrong password, an unknown e-mail and an inactive user identically', async () => {
      await givenUser(given.app, 'operator', {
        email: 'gone@example.com',
        active: false,
      });
      const attempts = [
        {email: 'viewer@example.com', password: 'wrong-password'},
        {email: 'nobody@example.com', password: TEST_PASSWORD},
        {email: 'gone@example.com', password: TEST_PASSWORD},
      ];
      const bodies = [];
      for (const credentials of attempts) {
        const res = await given.client
          .post('/api/auth/login')
          .send(credentials)
          .expect(401);
        bodies.push(withoutRequestId(res));
      }
      expect(bodies[0]).to.deepEqual({
        error: {
          statusCode: 401,
          name: 'UnauthorizedError',
          message: 'Invalid email or password',
        },
      });
      expect(bodies[1]).to.deepEqual(bodies[0]);
      expect(bodies[2]).to.deepEqual(bodies[0]);
    });

    it('rejects a malformed login body with 422', async () => {
      await given.client
        .post('/api/auth/login')
        .send({email: 'a@b.c'})
        .expect(422);
      await given.client
        .post('/api/auth/login')
        .send({email: 'a@b.c', password: 'x', role: 'admin'})
        .expect(422);
    });
  });

  describe('bearer tokens', () => {
    // The test app has no JWT_SECRET: it signs with the installation's secret.
    let installed = '';
    before(async () => {
      [{value: installed}] = await sql<{value: string}>(
        `SELECT value FROM installation_secret WHERE name = 'jwt'`,
      );
    });
    const secret = () => installed;
    const claims = () => ({
      sub: String(viewer.id),
      iat: Math.floor(Date.now() / 1000),
      exp: Math.floor(Date.now() / 1000) + 600,
    });
    const sign = (
      payload: object,
      options: jwt.SignOptions = {},
      key = secret(),
    ) =>
      jwt.sign(payload, key, {
        algorithm: 'HS256',
        issuer: 'task-scheduler',
        audience: 'task-scheduler-api',
        ...options,
      });

    const cases: Array<[string, () => string | undefined]> = [
      ['no Authorization header', () => undefined],
      ['"Bearer" with nothing', () => 'Bearer'],
      ['"Bearer " with a space only', () => 'Bearer '],
      [
        'another scheme',
        () => `Basic ${Buffer.from('a:b').toString('base64')}`,
      ],
      ['garbage', () => 'Bearer not.a.token'],
      [
        'alg: none',
        () =>
          `Bearer ${base64url({alg: 'none', typ: 'JWT'})}.${base64url({
            ...claims(),
            iss: 'task-scheduler',
            aud: 'task-scheduler-api',
          })}.`,
      ],
      ['a wrong secret', () => `Bearer ${sign(claims(), {}, 'x'.repeat(40))}`],
      [
        'an expired token',
        () =>
          `Bearer ${sign({...claims(), exp: Math.floor(Date.now() / 1000) - 5})}`,
      ],
      ['a token without exp', () => `Bearer ${sign({sub: String(viewer.id)})}`],
      [
        'a foreign issuer',
        () => `Bearer ${sign(claims(), {issuer: 'elsewhere'})}`,
      ],
      [
        'a foreign audience',
        () => `Bearer ${sign(claims(), {audience: 'other'})}`,
      ],
      [
        'a user that does not exist',
        () => `Bearer ${sign({...claims(), sub: '999999'})}`,
      ],
    ];
    for (const [label, header] of cases) {
      it(`answers ${label} with 401 UnauthorizedError`, async () => {
        const value = header();
        const request = given.client.get('/api/schedulers');
        const res = await (
          value === undefined ? request : request.set('Authorization', value)
        ).expect(401);
        expect(res.body.error).to.containDeep({
          statusCode: 401,
          name: 'UnauthorizedError',
        });
      });
    }

    it('accepts a well-formed token of an active user', async () => {
      await given.client
        .get('/api/schedulers')
        .set('Authorization', `Bearer ${sign(claims())}`)
        .expect(200);
    });

    it('stops accepting a token as soon as its user is deactivated', async () => {
      await asUser(given.client, viewer).get('/api/schedulers').expect(200);
      await withClient(TEST_DATABASE_URL, c =>
        c.query('UPDATE app_user SET active = false WHERE id = $1', [
          viewer.id,
        ]),
      );
      // Changed outside this process: its user cache hears of it through
      // PostgreSQL's NOTIFY within milliseconds (auth-user-cache.acceptance).
      await eventually(
        async () =>
          (await asUser(given.client, viewer).get('/api/schedulers')).status ===
            401 || undefined,
        1000,
      );
    });
  });

  describe('public endpoints', () => {
    for (const path of [
      '/api/openapi.json',
      '/api/ping',
      '/api/explorer/',
      '/',
    ]) {
      it(`serves ${path} without a token`, async () => {
        await given.client.get(path).expect(200);
      });
    }
  });
});
