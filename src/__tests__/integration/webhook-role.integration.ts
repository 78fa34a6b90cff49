import {expect} from '@loopback/testlab';
import {Webhook as StandardWebhook} from 'standardwebhooks';
import {TaskSchedulerApplication} from '../../application';
import {parseOutboundAllow} from '../../outbound/address-policy';
import {newSigningSecret} from '../../outbound/webhook-signature';
import {LogCapture} from '../fixtures/log-capture';
import {givenTestConfig} from '../fixtures/test-app';
import {resetBroker} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';
import {sql, truncateAll} from '../fixtures/test-database';
import {TestReceiver} from '../fixtures/test-receiver';

describe('Webhooks in the consumer role (issue 27)', () => {
  let receiver: TestReceiver;
  let app: TaskSchedulerApplication | undefined;

  before(async () => {
    receiver = await TestReceiver.listen('127.0.0.2');
  });
  after(() => receiver.close());
  beforeEach(async () => {
    await truncateAll();
    await resetBroker();
  });
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it('publishes what the outbox holds and delivers it, signed, without being asked', async () => {
    const logs = new LogCapture();
    app = new TaskSchedulerApplication(
      givenTestConfig({
        appMode: 'worker',
        httpTasks: {
          concurrency: 1,
          outboundAllow: parseOutboundAllow('127.0.0.2'),
        },
      }),
      logs.logger,
    );
    await app.start();
    const secret = newSigningSecret();
    const [user] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('hooks@example.com', 'h', 'x', 'admin') RETURNING id`,
    );
    await sql(
      `INSERT INTO webhook (user_id, url, events, signing_secret)
       VALUES ($1, $2, '["scheduler.created"]', $3)`,
      [user.id, receiver.url(), secret],
    );
    const [reminder] = await sql<{id: number}>(
      `INSERT INTO reminder (message) VALUES ('r') RETURNING id`,
    );
    await sql(
      `INSERT INTO scheduler (description, schedule, reminder_id)
       VALUES ('weekly', '0 8 * * 1', $1)`,
      [reminder.id],
    );
    await eventually(
      () => receiver.calls.length > 0 || undefined,
      15_000,
      'the delivery',
    );
    const body = new StandardWebhook(secret).verify(
      receiver.calls[0].body,
      receiver.calls[0].headers as Record<string, string>,
    ) as {type: string};
    expect(body.type).to.equal('scheduler.created');
    expect(logs.lines.join('\n')).to.not.containEql(secret);
  });
});
