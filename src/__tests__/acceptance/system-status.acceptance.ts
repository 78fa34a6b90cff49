import {expect} from '@loopback/testlab';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {asUser, givenTeam, Team} from '../fixtures/security';
import {resetBroker} from '../fixtures/test-broker';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

describe('GET /system/status (issue 15, item 10)', () => {
  let given: TestApp;
  let team: Team;

  before(async () => {
    given = await givenRunningApp();
  });
  after(() => given.app.stop());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    await sql('TRUNCATE producer_state');
    team = await givenTeam(given.app);
  });

  it('shows the producer, every queue, stay-alive workers and stored failures', async () => {
    await sql(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', '2026-11-24T01:00:00Z');
       INSERT INTO scheduler (description, schedule, report_id) VALUES ('s', '* * * * *', 1);
       INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id)
         VALUES (1, 'cron-x', 'host-a:1');
       INSERT INTO failed_task (scheduler_id, type, task_id, params_scheduler, payload, failed_reason, failed_at)
         VALUES (1, 'report', 1, '{}', '{}', 'boom', now())`,
    );
    const {body} = await asUser(given.client, team.viewer)
      .get('/api/system/status')
      .expect(200);
    expect(body.producer.last_evaluated_slot).to.equal(
      '2026-11-24T01:00:00.000Z',
    );
    expect(
      body.producer.instances.map(
        (i: {container_id: string}) => i.container_id,
      ),
    ).to.deepEqual(['host-a:1']);
    const names = body.queues.map((q: {name: string}) => q.name);
    expect(names).to.containDeep([
      'cron_scheduler',
      'cron_scheduler_reports',
      'cron_scheduler_failed',
    ]);
    expect(
      body.queues.find((q: {name: string}) => q.name === 'cron_scheduler'),
    ).to.containDeep({
      messages: 0,
      consumers: 0,
    });
    expect(body.stay_alive).to.deepEqual({
      schedulers: 0,
      supervised: 0,
      workers: [],
    });
    expect(body.failed_tasks).to.deepEqual({stored: 1});
    await given.client.get('/api/system/status').expect(401);
  });

  it('answers within a second with the broker part marked unavailable when the broker is down', async () => {
    const down = await givenRunningApp({
      amqpUrl: 'amqp://guest:guest@127.0.0.1:1',
    });
    try {
      const started = Date.now();
      const {body} = await asUser(down.client, team.viewer)
        .get('/api/system/status')
        .expect(200);
      expect(Date.now() - started).to.be.below(1500);
      expect(body.queues).to.containDeep({available: false});
      expect(body.failed_tasks).to.deepEqual({stored: 0});
    } finally {
      await down.app.stop();
    }
  });
});
