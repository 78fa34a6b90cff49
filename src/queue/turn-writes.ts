import type {ChannelModel} from 'amqplib';
import type {Writable} from 'node:stream';

/** What a connection's socket must offer to have its writes coalesced. */
type Corkable = Pick<Writable, 'write' | 'cork' | 'uncork'>;

/** An amqplib connection's socket: corkable, and destroyable to drop it. */
export type AmqpSocket = Corkable & Pick<Writable, 'destroy'>;

/**
 * Makes every frame `socket` is given in one turn of the event loop leave
 * in one write. amqplib writes each frame on its own (an ack, a publish's
 * three frames, each channel's output), and with Nagle off each is a
 * syscall and a packet for both ends: with many consumer channels, most of
 * a consumer's and much of RabbitMQ's CPU. The socket is corked at the
 * turn's first write and uncorked on the next tick: nothing waits for a
 * timer or for I/O, and order and backpressure are the stream's own.
 */
export function coalesceTurnWrites(socket: Corkable): void {
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function (this: Corkable, ...args: unknown[]) {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Corkable['write'];
}

/**
 * The socket under an amqplib connection (`connection.connection.stream`,
 * amqplib 0.10), or undefined when that shape has changed: the connection
 * then works as amqplib made it, only without the coalescing.
 */
export function amqpSocketOf(connection: ChannelModel): AmqpSocket | undefined {
  const stream = (connection as unknown as {connection?: {stream?: unknown}})
    .connection?.stream as Partial<AmqpSocket> | undefined;
  return typeof stream?.write === 'function' &&
    typeof stream.cork === 'function' &&
    typeof stream.uncork === 'function' &&
    typeof stream.destroy === 'function'
    ? (stream as AmqpSocket)
    : undefined;
}
