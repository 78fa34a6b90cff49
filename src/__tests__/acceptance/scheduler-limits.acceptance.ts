import {expect} from '@loopback/testlab';
import {loadConfig} from '../../config';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {asUser, AuthedClient, givenTeam, Team} from '../fixtures/security';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('Scheduler API: limits on what one scheduler may cost', () => {
  const STAY_ALIVE_MAX = 2;
  let given: TestApp;
  let team: Team;
  let admin: AuthedClient;
  let operator: AuthedClient;

  before(async () => {
    given = await givenRunningApp({
      stayAlive: {...loadConfig({}).stayAlive, maxWorkers: STAY_ALIVE_MAX},
    });
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    team = await givenTeam(given.app);
    admin = asUser(given.client, team.admin);
    operator = asUser(given.client, team.operator);
  });

  const stayAliveBody = {
    schedule: undefined,
    report_id: undefined,
    params: {},
    worker_id: 4,
    stay_alive: true,
  };
  const reminderBody = (params: object) =>
    givenSchedulerBody({report_id: undefined, reminder_id: 1, params});

  describe('stay-alive', () => {
    it('refuses the stay-alive scheduler beyond STAY_ALIVE_MAX with 422 naming the limit', async () => {
      for (let i = 0; i < STAY_ALIVE_MAX; i++) {
        await admin
          .post('/api/schedulers')
          .send(givenSchedulerBody(stayAliveBody))
          .expect(201);
      }
      const res = await admin
        .post('/api/schedulers')
        .send(givenSchedulerBody(stayAliveBody))
        .expect(422);
      expect(res.body.error.details[0]).to.containDeep({
        path: '/stay_alive',
        code: 'stayAliveMax',
      });
      expect(res.body.error.details[0].message).to.match(/STAY_ALIVE_MAX/);
      const [{n}] = await sql<{n: number}>(
        `SELECT count(*)::int AS n FROM scheduler WHERE stay_alive`,
      );
      expect(n).to.equal(STAY_ALIVE_MAX);
    });

    it('holds STAY_ALIVE_MAX against concurrent saves (the database decides the race)', async () => {
      const answers = await Promise.all(
        Array.from({length: 12}, () =>
          admin.post('/api/schedulers').send(givenSchedulerBody(stayAliveBody)),
        ),
      );
      const statuses = answers.map(res => res.status).sort();
      expect(statuses.filter(status => status === 201)).to.have.length(
        STAY_ALIVE_MAX,
      );
      expect(statuses.filter(status => status === 422)).to.have.length(
        12 - STAY_ALIVE_MAX,
      );
      for (const res of answers.filter(r => r.status === 422)) {
        expect(res.body.error.details[0]).to.containDeep({
          path: '/stay_alive',
          code: 'stayAliveMax',
        });
      }
      const [{n}] = await sql<{n: number}>(
        `SELECT count(*)::int AS n FROM scheduler WHERE stay_alive`,
      );
      expect(n).to.equal(STAY_ALIVE_MAX);
    });

    it('counts a PATCH that turns stay_alive on against the limit', async () => {
      for (let i = 0; i < STAY_ALIVE_MAX; i++) {
        await admin
          .post('/api/schedulers')
          .send(givenSchedulerBody(stayAliveBody))
          .expect(201);
      }
      const {body: oneTime} = await admin
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            ...stayAliveBody,
            stay_alive: false,
            date_time: '2099-03-01T09:30:00Z',
          }),
        )
        .expect(201);
      await admin
        .patch(`/api/schedulers/${oneTime.id}`)
        .send({stay_alive: true, date_time: null})
        .expect(422);
    });

    it('lets only admins mark a scheduler stay-alive (403 for an operator)', async () => {
      const res = await operator
        .post('/api/schedulers')
        .send(givenSchedulerBody(stayAliveBody))
        .expect(403);
      expect(res.body.error.name).to.equal('ForbiddenError');
      const {body: oneTime} = await operator
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({
            ...stayAliveBody,
            stay_alive: false,
            date_time: '2099-03-01T09:30:00Z',
          }),
        )
        .expect(201);
      await operator
        .patch(`/api/schedulers/${oneTime.id}`)
        .send({stay_alive: true, date_time: null})
        .expect(403);
    });
  });

  describe("a reminder's params.message", () => {
    it('refuses a message over 10,000 characters with 422', async () => {
      const res = await operator
        .post('/api/schedulers')
        .send(reminderBody({message: 'x'.repeat(10_001)}))
        .expect(422);
      expect(res.body.error.details[0]).to.containDeep({
        path: '/params/message',
        code: 'reminderMessage',
      });
    });

    it('refuses a message that is not a string, on create and on PATCH', async () => {
      await operator
        .post('/api/schedulers')
        .send(reminderBody({message: {html: '<b>x</b>'}}))
        .expect(422);
      const {body: created} = await operator
        .post('/api/schedulers')
        .send(reminderBody({message: 'Stand-up in 5 minutes'}))
        .expect(201);
      await operator
        .patch(`/api/schedulers/${created.id}`)
        .send({params: {message: 'x'.repeat(900_000)}})
        .expect(422);
    });

    it('accepts a message of exactly 10,000 characters', async () => {
      await operator
        .post('/api/schedulers')
        .send(reminderBody({message: 'x'.repeat(10_000)}))
        .expect(201);
    });
  });
});
