import {EventEmitter, once} from 'node:events';

/** An amqplib channel or connection (ChannelModel). */
type Closable = EventEmitter & {close(): Promise<void>};

/**
 * Closes an amqplib channel or connection, and settles once it is closed,
 * whichever way. amqplib's close() settles only on the broker's CloseOk: if
 * the socket dies first it never does, although the object still emits
 * 'close'. Awaiting it there would hang a reconnect, a resubscription, a
 * shutdown or a periodic pass for good. Errors are swallowed: the object is
 * let go either way.
 */
export async function closeQuietly(closable: Closable): Promise<void> {
  const closed = once(closable, 'close').catch(() => undefined);
  let closing: Promise<unknown>;
  try {
    closing = closable.close().catch(() => undefined);
  } catch {
    return;
  }
  await Promise.race([closing, closed]);
}
