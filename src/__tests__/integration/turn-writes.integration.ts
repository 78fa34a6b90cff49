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
