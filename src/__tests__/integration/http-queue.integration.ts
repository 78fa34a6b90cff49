import {expect} from '@loopback/testlab';
import {TaskSchedulerApplication} from '../../application';
import {parseOutboundAllow} from '../../outbound/address-policy';
import {newSigningSecret} from '../../outbound/webhook-signature';
import {LogCapture} from '../fixtures/log-capture';
import {givenTestConfig} from '../fixtures/test-app';
import {resetBroker} from '../fixtures/test-broker';
import {eventually, publishTask} from '../fixtures/test-consumer';
import {sql, truncateAll} from '../fixtures/test-database';
import {TestReceiver} from '../fixtures/test-receiver';

describe('HTTP tasks on their own queue (issue 27)', () => {
  let receiver: TestReceiver;
  let app: TaskSchedulerApplication | undefined;
  const held: Array<() => void> = [];

  before(async () => {
    receiver = await TestReceiver.listen('127.0.0.2');
  });
  after(() => receiver.close());
  beforeEach(async () => {
    await truncateAll();
    await resetBroker();
    receiver.calls.length = 0;
  });
  afterEach(async () => {
    for (const release of held.splice(0)) release();
    await app?.stop();
    app = undefined;
  });

  async function givenTarget(path: string): Promise<number> {
    const [row] = await sql<{id: number}>(
      `INSERT INTO http_target (name, url, timeout_ms, signing_secret)
       VALUES ($1, $2, 20000, $3) RETURNING id`,
      [path, receiver.url(path), newSigningSecret()],
    );
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, http_target_id)
       VALUES ($1, '* * * * *', $2) RETURNING id`,
      [path, row.id],
    );
    return scheduler.id;
  }

  it('calls a fast target while a slow one holds its call open', async () => {
    // The slow target answers only when the test lets it.
    receiver.answer = (call, response) => {
      if (call.path === '/slow') held.push(() => response.end('late'));
      else response.end('quick');
    };
    app = new TaskSchedulerApplication(
      givenTestConfig({
        appMode: 'worker',
        httpTasks: {
          concurrency: 2,
          outboundAllow: parseOutboundAllow('127.0.0.2'),
        },
      }),
      new LogCapture().logger,
    );
    await app.start();
    const slow = await givenTarget('/slow');
    const fast = await givenTarget('/fast');
    const message = (schedulerId: number, targetId: number) => ({
      type: 'http',
      id: targetId,
      scheduler_id: schedulerId,
      params_scheduler: '{}',
    });
    const [{id: slowTarget}] = await sql<{id: number}>(
      `SELECT http_target_id AS id FROM scheduler WHERE id = $1`,
      [slow],
    );
    const [{id: fastTarget}] = await sql<{id: number}>(
      `SELECT http_target_id AS id FROM scheduler WHERE id = $1`,
      [fast],
    );
    await publishTask(message(slow, slowTarget));
    await eventually(() => held.length === 1, 10_000, 'the slow call');
    await publishTask(message(fast, fastTarget));
    await eventually(
      () => receiver.calls.some(call => call.path === '/fast'),
      10_000,
      'the fast call while the slow one is open',
    );
    expect(held).to.have.length(1);
  });
});
