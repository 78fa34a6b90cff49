import {expect} from '@loopback/testlab';
import jwt from 'jsonwebtoken';
import {givenUser} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {sql} from '../fixtures/test-database';

/** The secret the service shipped in its source before it generated one. */
const SECRET_FROM_THE_SOURCE =
  'development-only-secret-do-not-use-in-production-0123456789';

const GENERATED =
  'Generated a random JWT signing secret and stored it in PostgreSQL (table installation_secret); set JWT_SECRET to choose your own';

describe('JWT signing secret without JWT_SECRET', () => {
  let first: TestApp | undefined;
  let second: TestApp | undefined;
  afterEach(async () => {
    await first?.app.stop();
    await second?.app.stop();
    first = second = undefined;
  });

  it('refuses a token hand-signed with the secret once written in the source', async () => {
    first = await givenRunningApp();
    const admin = await givenUser(first.app, 'admin');
    const now = Math.floor(Date.now() / 1000);
    const forged = jwt.sign(
      {sub: String(admin.id), iat: now, exp: now + 600},
      SECRET_FROM_THE_SOURCE,
      {
        algorithm: 'HS256',
        issuer: 'task-scheduler',
        audience: 'task-scheduler-api',
      },
    );
    await first.client
      .get('/api/users')
      .set('Authorization', `Bearer ${forged}`)
      .expect(401);
  });

  it('generates one random secret per installation, kept in PostgreSQL for every process', async () => {
    await sql(`DELETE FROM installation_secret`);
    first = await givenRunningApp();
    second = await givenRunningApp();
    expect(first.logs.find(GENERATED)).to.have.length(1);
    expect(second.logs.find(GENERATED)).to.have.length(0);
    const [row] = await sql<{value: string}>(
      `SELECT value FROM installation_secret WHERE name = 'jwt'`,
    );
    expect(row.value).to.have.length(64);
    // A token from one process is good at the other.
    const admin = await givenUser(first.app, 'admin');
    await second.client
      .get('/api/users')
      .set('Authorization', `Bearer ${admin.token}`)
      .expect(200);
    expect(JSON.stringify(first.logs.records)).to.not.containEql(row.value);
  });
});
