import {expect} from '@loopback/testlab';
import {
  asUser,
  givenUser,
  Team,
  givenTeam,
  TestUser,
} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {truncateAll} from '../fixtures/test-database';

describe('ticket ownership', () => {
  let given: TestApp;
  let team: Team;
  let otherOperator: TestUser;
  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    team = await givenTeam(given.app);
    otherOperator = await givenUser(given.app, 'operator');
  });

  async function givenTicketOf(user: TestUser): Promise<number> {
    const res = await asUser(given.client, user)
      .post('/api/tickets')
      .send({title: 'Printer on fire'})
      .expect(201);
    expect(res.body.user_id).to.equal(user.id);
    return res.body.id;
  }

  it("refuses another operator's change or delete of a ticket with 403, leaving it intact", async () => {
    const id = await givenTicketOf(team.operator);
    const other = asUser(given.client, otherOperator);
    const patched = await other
      .patch(`/api/tickets/${id}`)
      .send({status: 'closed'})
      .expect(403);
    expect(patched.body.error.name).to.equal('ForbiddenError');
    await other.delete(`/api/tickets/${id}`).expect(403);
    const read = await other.get(`/api/tickets/${id}`).expect(200);
    expect(read.body.status).to.equal('open');
  });

  it('lets the owner change and delete their own ticket', async () => {
    const id = await givenTicketOf(team.operator);
    const owner = asUser(given.client, team.operator);
    await owner
      .patch(`/api/tickets/${id}`)
      .send({status: 'closed'})
      .expect(200);
    await owner.delete(`/api/tickets/${id}`).expect(204);
  });

  it("lets an admin change and delete anyone's ticket", async () => {
    const id = await givenTicketOf(team.operator);
    const admin = asUser(given.client, team.admin);
    await admin
      .patch(`/api/tickets/${id}`)
      .send({status: 'closed'})
      .expect(200);
    await admin.delete(`/api/tickets/${id}`).expect(204);
  });

  it('lets everyone read every ticket', async () => {
    const id = await givenTicketOf(team.operator);
    const list = await asUser(given.client, team.viewer)
      .get('/api/tickets')
      .expect(200);
    expect(list.body.map((t: {id: number}) => t.id)).to.deepEqual([id]);
  });
});
