import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import {
  publishConfirmed,
  UnroutableError,
} from '../../consumer/confirmed-publish';
import {TEST_AMQP_URL, withChannel} from '../fixtures/test-broker';

const QUEUE = 'confirmed_publish_routable';
const NOWHERE = 'confirmed_publish_no_such_queue';

describe('publishConfirmed', () => {
  let connection: amqp.ChannelModel;
  let channel: amqp.ConfirmChannel;

  before(async () => {
    await withChannel(async c => {
      await c.deleteQueue(QUEUE);
      await c.assertQueue(QUEUE, {durable: false});
    });
    connection = await amqp.connect(TEST_AMQP_URL);
    channel = await connection.createConfirmChannel();
  });
  after(async () => {
    await connection.close();
    await withChannel(c => c.deleteQueue(QUEUE));
  });

  it('resolves once a routed message is confirmed', async () => {
    await publishConfirmed(channel, '', QUEUE, Buffer.from('one'), {});
    const got = await withChannel(c => c.get(QUEUE, {noAck: true}));
    expect(got && got.content.toString()).to.equal('one');
  });

  it('rejects a message no queue takes with UnroutableError', async () => {
    await expect(
      publishConfirmed(channel, '', NOWHERE, Buffer.from('lost'), {}),
    ).to.be.rejectedWith(UnroutableError);
  });

  // Review: the webhook consumer settles up to ten deliveries at once on
  // one channel, and each publish took any return it saw while it waited
  // for its confirm as its own: a retry that was routed failed as
  // unroutable beside one that was not.
  it('rejects only the unroutable one of two publishes waiting at once', async () => {
    const [unroutable, routed] = await Promise.allSettled([
      publishConfirmed(channel, '', NOWHERE, Buffer.from('lost'), {}),
      publishConfirmed(channel, '', QUEUE, Buffer.from('kept'), {}),
    ]);
    expect(unroutable.status).to.equal('rejected');
    expect((unroutable as PromiseRejectedResult).reason).to.be.instanceOf(
      UnroutableError,
    );
    expect(routed.status).to.equal('fulfilled');
    const got = await withChannel(c => c.get(QUEUE, {noAck: true}));
    expect(got && got.content.toString()).to.equal('kept');
  });
});
