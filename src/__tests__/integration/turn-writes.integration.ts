import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import type {Socket} from 'node:net';
import {AmqpConnection} from '../../queue/amqp-connection';
import {amqpSocketOf, coalesceTurnWrites} from '../../queue/turn-writes';
import {LogCapture} from '../fixtures/log-capture';
import {TEST_AMQP_URL} from '../fixtures/test-broker';

/** Counts the writes a socket asks of the OS (one per write or writev). */
function countWrites(socket: Socket): {count: number} {
  const counter = {count: 0};
  const target = socket as unknown as Record<
    string,
    (...a: unknown[]) => unknown
  >;
  for (const method of ['_write', '_writev']) {
    const original = target[method];
    target[method] = function (this: unknown, ...args: unknown[]) {
      counter.count++;
      return original.apply(this, args);
    };
  }
  return counter;
}

/**
 * Issue 17: amqplib writes every frame on its own; the service's broker
 * connections send a turn's frames in one write. On the real RabbitMQ, and
 * on the amqplib version the lock file pins: a change of its shape fails here.
 */
describe('broker connections: one write per turn', () => {
  it("finds the socket under an amqplib connection and sends a turn's publishes in one write, all confirmed", async () => {
    const connection = await amqp.connect(TEST_AMQP_URL, {noDelay: true});
    try {
      const socket = amqpSocketOf(connection);
      expect(socket).to.not.be.undefined();
      coalesceTurnWrites(socket!);
      const channel = await connection.createConfirmChannel();
      const {queue} = await channel.assertQueue('', {exclusive: true});
      const writes = countWrites(socket as unknown as Socket);
      // Three frames each (method, header, body): 60 frames in one turn.
      const confirms = Array.from(
        {length: 20},
        (_, i) =>
          new Promise<void>((resolve, reject) =>
            channel.sendToQueue(queue, Buffer.from(`m${i}`), {}, error =>
              error ? reject(error) : resolve(),
            ),
          ),
      );
      await Promise.all(confirms);
      expect(writes.count).to.be.belowOrEqual(2);
      expect((await channel.checkQueue(queue)).messageCount).to.equal(20);
    } finally {
      await connection.close();
    }
  });

  it('keeps order and flow with publishes far past the socket buffer, one turn each', async () => {
    const connection = await amqp.connect(TEST_AMQP_URL, {noDelay: true});
    try {
      coalesceTurnWrites(amqpSocketOf(connection)!);
      const channel = await connection.createConfirmChannel();
      const {queue} = await channel.assertQueue('', {exclusive: true});
      // 8 MiB bodies (many frames each) between small ones, all in one turn.
      const bodies = Array.from({length: 9}, (_, i) =>
        i % 3 === 1
          ? Buffer.alloc(8 * 1024 * 1024, String.fromCharCode(97 + i))
          : Buffer.from(`small ${i}`),
      );
      await Promise.all(
        bodies.map(
          body =>
            new Promise<void>((resolve, reject) =>
              channel.sendToQueue(queue, body, {}, error =>
                error ? reject(error) : resolve(),
              ),
            ),
        ),
      );
      for (const body of bodies) {
        const message = await channel.get(queue, {noAck: true});
        expect(message && message.content.equals(body)).to.be.true();
      }
    } finally {
      await connection.close();
    }
  });

  it('fails the confirms of a turn whose connection drops before its write, and throws nothing', async () => {
    const connection = await amqp.connect(TEST_AMQP_URL, {noDelay: true});
    connection.on('error', () => undefined);
    const socket = amqpSocketOf(connection)! as unknown as Socket;
    coalesceTurnWrites(socket);
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => undefined);
    const {queue} = await channel.assertQueue('', {exclusive: true});
    const outcomes = Array.from(
      {length: 5},
      (_, i) =>
        new Promise<string>(resolve =>
          channel.sendToQueue(queue, Buffer.from(`m${i}`), {}, error =>
            resolve(error ? 'failed' : 'confirmed'),
          ),
        ),
    );
    // Still corked: the frames have not left when the connection drops.
    socket.destroy(new Error('network gone'));
    const settled = await Promise.race([
      Promise.all(outcomes),
      new Promise<'hung'>(resolve => setTimeout(() => resolve('hung'), 3000)),
    ]);
    expect(settled).to.eql(Array(5).fill('failed'));
  });

  it("coalesces the service's own connections", async () => {
    const logs = new LogCapture();
    const connection = new AmqpConnection(TEST_AMQP_URL, logs.logger);
    await connection.start();
    try {
      expect(connection.connected).to.be.true();
      expect(
        logs.find(
          'Broker connection: frames are written one by one (amqplib changed shape)',
        ),
      ).to.have.length(0);
    } finally {
      await connection.stop();
    }
  });
});
