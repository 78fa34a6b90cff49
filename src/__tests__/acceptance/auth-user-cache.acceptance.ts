import {expect} from '@loopback/testlab';
import type {UserRepository} from '../../crud/repositories';
import {AuthBindings} from '../../keys';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {eventually} from '../fixtures/test-consumer';
import {sql, truncateAll} from '../fixtures/test-database';

/**
 * Issue 17: the API keeps the user behind a bearer token for
 * AUTH_USER_CACHE_MS, and every change that takes access away empties it:
 * at once when this process made it, within milliseconds (PostgreSQL's
 * NOTIFY) when another one did; while the change feed is down, every
 * request looks its user up.
 */
describe('auth user cache', () => {
  let given: TestApp;
  let team: Team;

  before(async () => {
    given = await givenRunningApp();
    await eventually(async () => (await feedListening()) || undefined);
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    team = await givenTeam(given.app);
  });
  afterEach(() => announced(true));

  const cache = () => given.app.getSync(AuthBindings.USER_CACHE);
  /** True while the app's feed holds its LISTEN session. */
  const feedListening = async () =>
    (
      await sql(
        `SELECT 1 FROM pg_stat_activity
          WHERE datname = current_database() AND query = 'LISTEN auth_changed'`,
      )
    ).length === 1;

  /** Switches the NOTIFY triggers on or off: with them off only this process's own clearing works. */
  async function announced(on: boolean) {
    const verb = on ? 'ENABLE' : 'DISABLE';
    await sql(`ALTER TABLE app_user ${verb} TRIGGER app_user_auth_changed`);
    await sql(
      `ALTER TABLE revoked_token ${verb} TRIGGER revoked_token_auth_changed`,
    );
  }

  /** A change no trigger announces: what only the cache can hide. */
  async function quietly(statement: string, values: unknown[]) {
    await announced(false);
    await sql(statement, values);
    await announced(true);
  }

  it("keeps a token's user between requests: an unannounced change is not seen", async () => {
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(200);
    expect(cache().size).to.equal(1);
    await quietly(`UPDATE app_user SET active = false WHERE id = $1`, [
      team.viewer.id,
    ]);
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(200);
  });

  it('refuses a token on the very next request once its user is deactivated through the API', async () => {
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(200);
    // Not waiting for the notification: this process clears what it changed.
    await announced(false);
    await asUser(given.client, team.admin)
      .patch(`/api/users/${team.viewer.id}`)
      .send({active: false})
      .expect(200);
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(401);
  });

  it("applies a role change through the API to the user's very next request", async () => {
    await asUser(given.client, team.operator)
      .get('/api/schedulers')
      .expect(200);
    await announced(false);
    await asUser(given.client, team.admin)
      .patch(`/api/users/${team.operator.id}`)
      .send({role: 'viewer'})
      .expect(200);
    // A role change cuts the user's earlier tokens off.
    await asUser(given.client, team.operator)
      .get('/api/schedulers')
      .expect(401);
  });

  it('refuses a signed-out token on the very next request', async () => {
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(200);
    await announced(false);
    await asUser(given.client, team.viewer)
      .post('/api/auth/logout')
      .expect(204);
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(401);
  });

  it('hears a deactivation made by another process within a second', async () => {
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(200);
    const changed = Date.now();
    await sql(`UPDATE app_user SET active = false WHERE id = $1`, [
      team.viewer.id,
    ]);
    await eventually(
      async () =>
        (await asUser(given.client, team.viewer).get('/api/schedulers'))
          .status === 401 || undefined,
      1000,
      'the deactivation to be heard',
    );
    expect(Date.now() - changed).to.be.below(1000);
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(401);
  });

  /**
   * Holds the answer of the next token lookup (the JWT strategy's query of
   * app_user) after PostgreSQL gave it: a lookup whose snapshot came before
   * a change, answered after that change emptied the cache, as a busy
   * process or network can order them. Nothing is faked: the statement runs.
   */
  async function holdNextLookup() {
    const users = await given.app.get<UserRepository>(
      'repositories.UserRepository',
    );
    const execute = users.execute;
    let reached!: () => void;
    let release!: () => void;
    const answered = new Promise<void>(resolve => (reached = resolve));
    const released = new Promise<void>(resolve => (release = resolve));
    users.execute = async function (this: UserRepository, ...args) {
      const result = await execute.apply(this, args);
      if (String(args[0]).includes('FROM app_user u')) {
        users.execute = execute;
        reached();
        await released;
      }
      return result;
    } as typeof execute;
    return {answered, release, restore: () => (users.execute = execute)};
  }

  /** Resolves once the cache has been emptied after this call. */
  function emptied(): Promise<unknown> {
    const c = cache();
    c.set('not-a-token', {} as never, {} as never, c.generation);
    return eventually(
      () => c.size === 0 || undefined,
      2000,
      'the cache to empty',
    );
  }

  for (const where of ['another process', 'this process'] as const) {
    it(`keeps no user looked up before a deactivation by ${where} that emptied the cache meanwhile`, async () => {
      cache().clear();
      const hold = await holdNextLookup();
      try {
        const inFlight = asUser(given.client, team.viewer).get(
          '/api/schedulers',
        );
        const done = inFlight.then(response => response.status);
        await hold.answered;
        // The lookup read the user as active; now the user is deactivated.
        const cleared = emptied();
        if (where === 'another process') {
          await sql(`UPDATE app_user SET active = false WHERE id = $1`, [
            team.viewer.id,
          ]);
        } else {
          await announced(false);
          await asUser(given.client, team.admin)
            .patch(`/api/users/${team.viewer.id}`)
            .send({active: false})
            .expect(200);
        }
        await cleared;
        hold.release();
        // In flight across the change: its answer may go either way.
        await done;
      } finally {
        hold.restore();
      }
      await asUser(given.client, team.viewer)
        .get('/api/schedulers')
        .expect(401);
    });
  }

  it('looks every user up while it cannot hear changes, and trusts the cache again once it listens', async () => {
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(200);
    await sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN auth_changed'`,
    );
    await eventually(
      () =>
        given.logs.find(
          'Auth change feed lost: every request looks its user up until it listens again',
        ).length > 0 || undefined,
    );
    expect(cache().enabled).to.be.false();
    await quietly(`UPDATE app_user SET active = false WHERE id = $1`, [
      team.viewer.id,
    ]);
    await asUser(given.client, team.viewer).get('/api/schedulers').expect(401);
    await eventually(() => cache().enabled || undefined, 5000);
    expect(await feedListening()).to.be.true();
    await asUser(given.client, team.admin).get('/api/schedulers').expect(200);
    expect(cache().size).to.equal(1);
  });
});
