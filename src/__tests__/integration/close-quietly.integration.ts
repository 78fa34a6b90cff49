import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import {closeQuietly} from '../../queue/close-quietly';
import {TEST_AMQP_URL} from '../fixtures/test-broker';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {eventually} from '../fixtures/test-consumer';

/** Whether `promise` settles within `ms`. */
async function settlesWithin(
  promise: Promise<unknown>,
  ms: number,
): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>(resolve => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return settled;
}

/**
 * Review of the subscription fix (d798edd): amqplib's close() waits for the
 * broker's CloseOk, so a close sent into a dead link never settles, and the
 * service awaited it on its reconnect, resubscribe, shutdown and queue-check
 * paths. On the real broker, through a proxy that swallows the close and
 * then drops the link.
 */
describe('broker: closing a channel or connection whose link dies first', () => {
  let proxy: TcpProxy;
  beforeEach(async () => {
    const target = new URL(TEST_AMQP_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5672));
    await proxy.start();
  });
  afterEach(() => proxy.close());

  it("settles although amqplib's own close() never does", async () => {
    const connection = await amqp.connect(viaPort(TEST_AMQP_URL, proxy.port));
    connection.on('error', () => undefined);
    const first = await connection.createChannel();
    const second = await connection.createChannel();
    for (const channel of [first, second]) channel.on('error', () => undefined);
    proxy.stall();
    const raw = first.close();
    const quiet = closeQuietly(second);
    const quietConnection = closeQuietly(connection);
    proxy.cut();
    expect(await settlesWithin(quiet, 5000)).to.be.true();
    expect(await settlesWithin(quietConnection, 5000)).to.be.true();
    // The behaviour the helper is for: amqplib's promise stays pending.
    expect(await settlesWithin(raw, 1000)).to.be.false();
  });

  it('closes a live channel and connection as close() does', async () => {
    const connection = await amqp.connect(viaPort(TEST_AMQP_URL, proxy.port));
    const channel = await connection.createChannel();
    let channelClosed = false;
    channel.on('close', () => (channelClosed = true));
    await closeQuietly(channel);
    expect(channelClosed).to.be.true();
    await closeQuietly(channel); // already closed: settles at once
    await closeQuietly(connection);
    await closeQuietly(connection);
    await eventually(
      () => proxy.openConnections === 0,
      5000,
      'the connection to be gone',
    );
  });
});
