import {expect} from '@loopback/testlab';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

interface Event {
  actor_user_id: number;
  action: string;
  entity: string;
  entity_id: string;
  reason: string | null;
  changes: Record<string, [unknown, unknown]>;
}

describe('audit log of API writes (issue 15, item 7)', () => {
  let given: TestApp;
  let team: Team;
  let operator: AuthedClient;
  let admin: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
    operator = asUser(given.client, team.operator);
    admin = asUser(given.client, team.admin);
  });

  const events = () =>
    sql<Event>(
      `SELECT actor_user_id, action, entity, entity_id, reason, changes
         FROM audit_event WHERE entity <> 'session' ORDER BY id`,
    );

  it('records create, update and delete of a scheduler with the changed fields and the reason', async () => {
    const {body: created} = await operator
      .post('/api/schedulers')
      .set('X-Change-Reason', 'new nightly report')
      .send(givenSchedulerBody())
      .expect(201);
    await operator
      .patch(`/api/schedulers/${created.id}`)
      .set('X-Change-Reason', 'pause for the migration')
      .send({status: false})
      .expect(200);
    await operator.delete(`/api/schedulers/${created.id}`).expect(204);
    const [create, update, remove] = await events();
    expect(create).to.containDeep({
      actor_user_id: team.operator.id,
      action: 'create',
      entity: 'scheduler',
      entity_id: String(created.id),
      reason: 'new nightly report',
    });
    expect(create.changes.schedule).to.deepEqual([null, '0 6 * * *']);
    expect(update).to.containDeep({
      action: 'update',
      reason: 'pause for the migration',
    });
    expect(update.changes.status).to.deepEqual([true, false]);
    expect(Object.keys(update.changes)).to.not.containEql('schedule');
    expect(remove).to.containDeep({action: 'delete', reason: null});
    expect(remove.changes.description).to.deepEqual([
      created.description,
      null,
    ]);
    const {body: listed} = await operator
      .get('/api/audit-events?filter={"where":{"entity":"scheduler"}}')
      .expect(200);
    expect(listed.map((e: Event) => e.action)).to.deepEqual([
      'delete',
      'update',
      'create',
    ]);
  });

  it('never stores a password or its hash, only that it changed', async () => {
    const {body: user} = await admin
      .post('/api/users')
      .send({
        email: 'new.person@example.com',
        name: 'New Person',
        role: 'viewer',
        password: 'a-long-unusual-phrase',
      })
      .expect(201);
    await admin
      .patch(`/api/users/${user.id}`)
      .send({password: 'another-long-phrase-2'})
      .expect(200);
    const logged = await events();
    expect(logged.map(e => e.changes.password)).to.deepEqual([
      ['[redacted]', '[redacted]'],
      ['[redacted]', '[redacted]'],
    ]);
    expect(JSON.stringify(logged)).to.not.match(
      /a-long-unusual-phrase|another-long-phrase|scrypt|password_hash/,
    );
  });

  it('writes nothing for a refused change, and refuses a reason over 500 characters', async () => {
    await operator
      .post('/api/schedulers')
      .send(givenSchedulerBody({report_id: 999}))
      .expect(422);
    await operator
      .post('/api/schedulers')
      .set('X-Change-Reason', 'r'.repeat(501))
      .send(givenSchedulerBody())
      .expect(422);
    expect(await events()).to.deepEqual([]);
    const [{n}] = await sql<{n: number}>(
      `SELECT count(*)::int AS n FROM scheduler`,
    );
    expect(n).to.equal(0);
  });
});
