import {expect} from '@loopback/testlab';
import {ensureInitialAdmin} from '../../auth/initial-admin';
import {verifyPassword} from '../../auth/password-hasher';
import {LogCapture} from '../fixtures/log-capture';
import {
  TEST_DATABASE_URL,
  truncateAll,
  withClient,
} from '../fixtures/test-database';

const ADMIN = {email: 'ops@example.com', password: 'first-admin-pass'};

async function admins() {
  return withClient(TEST_DATABASE_URL, async client => {
    const {rows} = await client.query(
      `SELECT email, role, active, password_hash FROM app_user WHERE role = 'admin' ORDER BY id`,
    );
    return rows;
  });
}

describe('first admin (npm run migrate)', () => {
  beforeEach(() => truncateAll());

  it('creates the admin from ADMIN_EMAIL / ADMIN_PASSWORD when none exists', async () => {
    const logs = new LogCapture();
    expect(
      await ensureInitialAdmin(TEST_DATABASE_URL, ADMIN, logs.logger),
    ).to.equal('created');
    const [admin] = await admins();
    expect(admin).to.containDeep({
      email: 'ops@example.com',
      role: 'admin',
      active: true,
    });
    expect(
      await verifyPassword(ADMIN.password, admin.password_hash),
    ).to.be.true();
    expect(logs.lines.join('\n')).to.not.containEql(ADMIN.password);
  });

  it('changes nothing while an active admin exists', async () => {
    const logs = new LogCapture();
    await ensureInitialAdmin(TEST_DATABASE_URL, ADMIN, logs.logger);
    const other = {email: 'second@example.com', password: 'another-password'};
    expect(
      await ensureInitialAdmin(TEST_DATABASE_URL, other, logs.logger),
    ).to.equal('exists');
    expect((await admins()).map(a => a.email)).to.deepEqual([
      'ops@example.com',
    ]);
  });

  it('promotes and resets an existing user when no admin is left (the way back in)', async () => {
    await withClient(TEST_DATABASE_URL, client =>
      client.query(
        `INSERT INTO app_user (email, name, password_hash, role) VALUES ('ops@example.com', 'Ops', 'x', 'viewer')`,
      ),
    );
    await ensureInitialAdmin(TEST_DATABASE_URL, ADMIN, new LogCapture().logger);
    const [admin] = await admins();
    expect(admin.email).to.equal('ops@example.com');
    expect(
      await verifyPassword(ADMIN.password, admin.password_hash),
    ).to.be.true();
  });

  it('warns how to create one when no admin exists and none is configured', async () => {
    const logs = new LogCapture();
    expect(
      await ensureInitialAdmin(TEST_DATABASE_URL, undefined, logs.logger),
    ).to.equal('missing');
    expect(
      logs.find(
        'No active admin user: set ADMIN_EMAIL and ADMIN_PASSWORD and run npm run migrate',
      ),
    ).to.have.length(1);
  });
});
