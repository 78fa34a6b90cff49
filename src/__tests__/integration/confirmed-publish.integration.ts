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

  // Review of the fix above, which matched a return by its route alone: a
  // message sent to a queue just before it was declared came back, and the
  // next one, routed, took that return as its own.
  it('gives a return only to the message it brings back, the route alike', async () => {
    const late = 'confirmed_publish_declared_late';
    await channel.deleteQueue(late);
    const before = publishConfirmed(channel, '', late, Buffer.from('A'), {});
    const declared = channel.assertQueue(late, {durable: false});
    const after = publishConfirmed(channel, '', late, Buffer.from('B'), {});
    const [first, second] = await Promise.allSettled([before, after]);
    await declared;
    try {
      expect(first.status).to.equal('rejected');
      expect(second.status).to.equal('fulfilled');
      const got = await withChannel(c => c.get(late, {noAck: true}));
      expect(got && got.content.toString()).to.equal('B');
    } finally {
      await channel.deleteQueue(late);
    }
  });

  // Review: amqplib queues the confirm callback before it encodes the
  // message, so one that failed to encode shifted every later confirm on
  // the channel by one, and the last publish never settled.
  it('keeps later confirms in step after a publish that failed to encode', async () => {
    await expect(
      publishConfirmed(channel, '', 'x'.repeat(300), Buffer.from('bad'), {}),
    ).to.be.rejectedWith(/routingKey/);
    await expect(
      publishConfirmed(channel, '', 'x', Buffer.from('bad'), {
        headers: {big: 10n ** 30n},
      }),
    ).to.be.rejectedWith(/bigint/);
    const next = publishConfirmed(channel, '', QUEUE, Buffer.from('next'), {});
    const settled = await Promise.race([
      next.then(() => 'confirmed'),
      new Promise(resolve => setTimeout(() => resolve('still waiting'), 5000)),
    ]);
    expect(settled).to.equal('confirmed');
    await withChannel(c => c.purgeQueue(QUEUE));
  });

  it('leaves one return listener on a channel however many publishes wait at once', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const results = await Promise.allSettled(
        Array.from({length: 20}, (_, i) =>
          publishConfirmed(
            channel,
            '',
            i % 2 ? QUEUE : NOWHERE,
            Buffer.from(`m${i}`),
            {},
          ),
        ),
      );
      expect(results.map(r => r.status)).to.deepEqual(
        Array.from({length: 20}, (_, i) => (i % 2 ? 'fulfilled' : 'rejected')),
      );
      expect(channel.listenerCount('return')).to.equal(1);
      expect(warnings.map(w => w.name)).to.not.containEql(
        'MaxListenersExceededWarning',
      );
    } finally {
      process.off('warning', onWarning);
      await withChannel(c => c.purgeQueue(QUEUE));
    }
  });
});
