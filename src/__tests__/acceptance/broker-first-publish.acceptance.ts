import {expect} from '@loopback/testlab';
import {asUser, givenTeam} from '../fixtures/security';
import {drainQueue, resetBroker} from '../fixtures/test-broker';
import {TASK_QUEUE} from '../../queue/topology';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, truncateAll} from '../fixtures/test-database';

describe('the API opens the broker on first use', () => {
  let given: TestApp;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    // A new app: its broker connection is not open yet.
    given = await givenRunningApp();
  });
  afterEach(() => given.app.stop());

  it('lets requests that come while it opens wait for it, not answer 503 (review: 5 of 6 concurrent backfills did)', async () => {
    const team = await givenTeam(given.app);
    const operator = asUser(given.client, team.operator);
    const {body: scheduler} = await operator
      .post('/api/schedulers')
      .send(givenSchedulerBody())
      .expect(201);
    const answers = await Promise.all(
      Array.from({length: 8}, () =>
        operator.post(`/api/schedulers/${scheduler.id}/run`).send({}),
      ),
    );
    expect(answers.map(res => res.status)).to.deepEqual(Array(8).fill(202));
    expect(answers.map(res => res.body.status)).to.deepEqual(
      Array(8).fill('published'),
    );
    expect(await drainQueue(TASK_QUEUE)).to.have.length(8);
  });
});
