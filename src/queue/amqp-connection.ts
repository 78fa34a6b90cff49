import amqp, {Channel, ChannelModel, ConfirmChannel} from 'amqplib';
import {EventEmitter} from 'node:events';
import type {Logger} from '../logging/logger';
import {connectOrder, parseBrokerUrls} from './broker-urls';
import {amqpSocketOf, coalesceTurnWrites} from './turn-writes';
import {closeQuietly} from './close-quietly';

export interface AmqpConnectionOptions {
  /** Runs on every (re)connect before the connection is announced. */
  onConnect?: (connection: AmqpConnection) => Promise<void>;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /**
   * How long one attempt (TCP and the AMQP handshake) may take. A peer that
   * accepts the connection and never answers held an attempt, and every
   * request waiting for it, until the socket died; past this it is a broker
   * that is down: retried with backoff.
   */
  connectTimeoutMs?: number;
  /** How long stop() waits for the broker to answer its close (CLOSE_TIMEOUT_MS). */
  closeTimeoutMs?: number;
}

/** AMQP_CONNECT_TIMEOUT_MS's default. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * How long stop() waits for the broker to answer its close: a healthy one
 * answers within milliseconds, even with thousands of unsettled messages.
 */
export const CLOSE_TIMEOUT_MS = 5_000;

/** The URL without credentials, for logs; a list names each node. */
export function describeAmqpUrl(url: string): string {
  return parseBrokerUrls(url)
    .map(item => {
      const parsed = new URL(item);
      return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
    })
    .join(',');
}

/**
 * Connects to the first reachable node of `url` (one URL or a comma list of
 * one cluster's nodes), trying them in a shuffled order.
 */
export async function connectToAnyNode(
  url: string,
  options: amqp.Options.Connect & Record<string, unknown>,
  random?: () => number,
): Promise<{connection: ChannelModel; node: string}> {
  let lastError: unknown;
  for (const node of connectOrder(parseBrokerUrls(url), random)) {
    try {
      return {connection: await amqp.connect(node, options), node};
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * One AMQP connection that comes back by itself. amqplib has no recovery of
 * its own: on loss this reconnects with capped exponential backoff and emits
 * `connected` again, so channels and consumers can be re-created.
 */
export class AmqpConnection extends EventEmitter {
  private connection?: ChannelModel;
  private stopping = false;
  private retryTimer?: NodeJS.Timeout;
  private attempt = 0;
  /** Every node, for logs; `node` is the one connected to now. */
  private readonly where: string;
  private node?: string;
  /** Why the broker blocks the connection's publishers now (a resource alarm), if it does. */
  private blockedBy?: string;
  /** Connections this side dropped: their socket error is ours, not news. */
  private readonly dropped = new WeakSet<ChannelModel>();

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly options: AmqpConnectionOptions = {},
  ) {
    super();
    this.where = describeAmqpUrl(url);
  }

  get connected(): boolean {
    return this.connection !== undefined;
  }

  /**
   * The broker's reason while it blocks this connection's publishers
   * (`connection.blocked`: a memory or disk alarm, which blocks every
   * publishing connection alike), else undefined.
   */
  get blocked(): string | undefined {
    return this.blockedBy;
  }

  /**
   * Connects once; if the broker is unreachable or cannot serve a queue for
   * now, keeps trying in the background. Other errors from `onConnect` (a
   * topology mismatch, refused access) are thrown: they need a person.
   */
  async start(): Promise<void> {
    this.stopping = false;
    try {
      await this.connect();
    } catch (error) {
      if (error instanceof LostDuringSetup) return;
      if (!isUnavailableError(error)) throw error;
      this.scheduleReconnect(error as Error);
    }
  }

  async createChannel(): Promise<Channel> {
    return this.require().createChannel();
  }

  async createConfirmChannel(): Promise<ConfirmChannel> {
    return this.require().createConfirmChannel();
  }

  /**
   * Idempotent: stops reconnecting and closes the connection, waiting at
   * most CLOSE_TIMEOUT_MS for the broker to agree: one that stopped reading
   * the socket (blocked or in flow control) never would, and a shutdown
   * would wait for its deadline. Then the socket is destroyed.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const connection = this.connection;
    this.connection = undefined;
    if (connection) {
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        closeQuietly(connection).then(() => true),
        new Promise<false>(resolve => {
          timer = setTimeout(
            () => resolve(false),
            this.options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS,
          );
        }),
      ]);
      clearTimeout(timer);
      if (!closed)
        this.destroy(connection, 'the broker did not answer the close');
      this.logger.info('Broker connection closed', {
        broker: this.where,
        ...(closed ? {} : {unanswered_close: true}),
      });
    }
  }

  /**
   * Ends the connection at once, without the close handshake: a broker that
   * stopped reading this socket (a connection stuck in flow control) would
   * never answer one. The reconnect follows as after any loss. For a
   * connection that stopped answering: a fresh one is served at once.
   */
  drop(reason: string): void {
    const connection = this.connection;
    if (!connection) return;
    this.logger.warn('Broker connection dropped', {
      broker: this.node,
      reason,
    });
    this.blockedBy = undefined;
    // Gone for this side now, whatever amqplib makes of it: channels are
    // re-created on the next connection.
    this.connection = undefined;
    this.emit('disconnected');
    this.scheduleReconnect(new Error(`dropped: ${reason}`));
    this.destroy(connection, `dropped: ${reason}`);
  }

  /**
   * Ends `connection`'s socket without a handshake (or, should amqplib's
   * shape have changed, closes it in its own time); the socket error amqplib
   * then reports is this side's doing, not logged.
   */
  private destroy(connection: ChannelModel, reason: string): void {
    this.dropped.add(connection);
    const socket = amqpSocketOf(connection);
    if (socket) socket.destroy(new Error(reason));
    else closeQuietly(connection).catch(() => undefined);
  }

  private require(): ChannelModel {
    if (!this.connection) throw new Error(`not connected to ${this.where}`);
    return this.connection;
  }

  private async connect(): Promise<void> {
    const {connection, node} = await connectToAnyNode(this.url, {
      clientProperties: {connection_name: `task-scheduler ${process.pid}`},
      // amqplib leaves Nagle on: small frames (acks, single publishes) would
      // wait for earlier ones to be acknowledged, which caps prefetch-1 throughput.
      noDelay: true,
      // amqplib sets no timeout of its own; it fails with 'connect ETIMEDOUT'.
      timeout: this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    });
    this.node = describeAmqpUrl(node);
    const socket = amqpSocketOf(connection);
    if (socket) coalesceTurnWrites(socket);
    else {
      this.logger.warn(
        'Broker connection: frames are written one by one (amqplib changed shape)',
        {broker: this.node},
      );
    }
    if (this.stopping) {
      // stop() ran while this (re)connect was under way: do not keep it.
      await closeQuietly(connection);
      return;
    }
    connection.on('error', error => {
      if (this.dropped.has(connection)) return;
      this.logger.warn('Broker connection error', {
        broker: this.node,
        error: error.message,
      });
    });
    // A resource alarm blocks every publishing connection: publishes wait
    // until it clears, and a fresh connection would wait alike.
    connection.on('blocked', (reason: unknown) => {
      if (this.connection !== connection) return;
      this.blockedBy = String(reason ?? 'no reason given');
      this.logger.warn('Broker blocks publishing', {
        broker: this.node,
        reason: this.blockedBy,
      });
    });
    connection.on('unblocked', () => {
      if (this.connection !== connection || this.blockedBy === undefined)
        return;
      this.blockedBy = undefined;
      this.logger.info('Broker publishing unblocked', {broker: this.node});
    });
    connection.on('close', () => {
      if (this.connection !== connection) return;
      this.connection = undefined;
      this.blockedBy = undefined;
      this.emit('disconnected');
      if (!this.stopping)
        this.scheduleReconnect(new Error('connection closed'));
    });
    this.connection = connection;
    try {
      await this.options.onConnect?.(this);
    } catch (error) {
      if (this.connection !== connection) {
        // It closed under the setup: its close handler has already planned
        // the reconnect, which may even have succeeded by now; leave it be.
        throw new LostDuringSetup(error as Error);
      }
      this.connection = undefined;
      await closeQuietly(connection);
      throw error;
    }
    // Closed under a setup that still finished: the reconnect is planned.
    if (this.connection !== connection) return;
    this.attempt = 0;
    this.logger.info('Broker connected', {broker: this.node});
    this.emit('connected');
  }

  private scheduleReconnect(cause: Error): void {
    // One plan at a time: a close during a failing setup asks twice.
    if (this.stopping || this.retryTimer) return;
    const min = this.options.minBackoffMs ?? 500;
    const max = this.options.maxBackoffMs ?? 30_000;
    const delay = Math.min(max, min * 2 ** this.attempt);
    this.attempt++;
    this.logger.warn('Broker unavailable, reconnecting', {
      broker: this.where,
      error: cause.message,
      retry_in_ms: delay,
      attempt: this.attempt,
    });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.stopping) return;
      this.connect().catch(error => {
        if (error instanceof LostDuringSetup) return;
        if (!isUnavailableError(error)) {
          // e.g. the topology was changed behind our back: loud, but keep trying.
          this.logger.error('Broker setup failed', {
            broker: this.where,
            error: (error as Error).message,
          });
        }
        this.scheduleReconnect(error as Error);
      });
    }, delay);
  }
}

/** The connection closed while `onConnect` ran; a reconnect is already planned. */
class LostDuringSetup extends Error {
  constructor(cause: Error) {
    super(`connection closed during setup: ${cause.message}`, {cause});
  }
}

/**
 * Failures that pass when the broker recovers, worth retrying; anything else
 * is a real error. Besides the network: 320 CONNECTION_FORCED (a node going
 * down), 541 INTERNAL_ERROR, and a queue the broker cannot serve for now:
 * 404 NOT_FOUND naming a home node that is down or inaccessible (a classic
 * queue whose node is down; in CI's cluster, a quorum queue another process
 * was declaring at that moment) or an operation that timed out (a quorum
 * queue without its majority). Not a missing queue or exchange, 403 (access)
 * nor a topology mismatch (406, thrown as TopologyMismatchError).
 */
function isUnavailableError(error: unknown): boolean {
  const code = (error as {code?: string | number})?.code;
  const message = (error as Error)?.message ?? '';
  return (
    typeof code === 'string' ||
    code === 320 ||
    code === 541 ||
    (code === 404 && /is down or inaccessible|due to timeout/.test(message)) ||
    /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|Socket closed|connection closed/i.test(
      message,
    )
  );
}
