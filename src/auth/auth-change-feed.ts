import {Client} from 'pg';
import type {Logger} from '../logging/logger';
import type {AuthUserCache} from './user-cache';

/** The channel the app_user and revoked_token triggers notify on. */
export const AUTH_CHANGED_CHANNEL = 'auth_changed';

export interface AuthChangeFeedOptions {
  /** First wait before reconnecting; doubles up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** How long a connection attempt may go unanswered before it is retried. */
  connectTimeoutMs?: number;
}

/**
 * Tells an AuthUserCache of every change that can take access away, made by
 * any process: triggers on app_user (a role, activity or token cut-off
 * changed, a user deleted) and revoked_token (a token signed out) notify
 * AUTH_CHANGED_CHANNEL, and each notification empties the cache. It
 * listens on a session of its own; the cache is trusted only while that
 * session listens, and emptied and distrusted as soon as it is lost, until
 * a reconnect (with backoff) listens again. A notification arrives after
 * its transaction commits, within milliseconds; what this process changes
 * itself is cleared before its answer leaves (AuthCacheResetMiddleware).
 */
export class AuthChangeFeed {
  private client?: Client;
  /** The session being opened, not listening yet. */
  private connecting?: Client;
  private stopped = true;
  private retryTimer?: NodeJS.Timeout;
  private attempt = 0;

  constructor(
    private readonly url: string,
    private readonly cache: AuthUserCache,
    private readonly logger: Logger,
    private readonly options: AuthChangeFeedOptions = {},
  ) {}

  /** True while the feed listens (and the cache is trusted). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  /**
   * Starts listening in the background, retrying until it does: the cache
   * is an optimisation, so a session that is slow or never answers must not
   * hold up the API's start (until it listens, every request looks its user
   * up).
   */
  async start(): Promise<void> {
    this.stopped = false;
    this.connect().catch(() => undefined);
  }

  /** Idempotent: stops listening and reconnecting; the cache is distrusted. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.cache.trust(false);
    const client = this.client;
    this.client = undefined;
    // A session still being opened may get no answer to its goodbye either:
    // not waited for (its connect timeout ends it).
    this.connecting?.end().catch(() => undefined);
    this.connecting = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.url,
      // A silent network loss shows within a minute; the cache's TTL bounds what it misses.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // An attempt nobody answers (a stalled server or proxy) is retried.
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? 10_000,
    });
    this.connecting = client;
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      this.lost(client, error);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', () => this.cache.clear());
    try {
      await client.connect();
      await client.query(`LISTEN ${AUTH_CHANGED_CHANNEL}`);
    } catch (error) {
      onLost(error as Error);
      await client.end().catch(() => undefined);
      return;
    } finally {
      if (this.connecting === client) this.connecting = undefined;
    }
    if (lost) return;
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    if (this.attempt > 0) {
      this.logger.info('Auth change feed listening again', {
        attempts: this.attempt,
      });
    }
    this.attempt = 0;
    this.cache.trust(true);
  }

  private lost(client: Client, error?: Error): void {
    const wasListening = this.client === client;
    // An earlier session ending while a newer one listens changes nothing.
    if (!wasListening && this.client) return;
    this.client = undefined;
    // Changes may go unheard from now on: no entry answers until listening again.
    this.cache.trust(false);
    if (this.stopped) return;
    const min = this.options.minBackoffMs ?? 500;
    const delayMs = Math.min(
      this.options.maxBackoffMs ?? 30_000,
      min * 2 ** this.attempt,
    );
    if (wasListening || this.attempt === 0) {
      this.logger.warn(
        'Auth change feed lost: every request looks its user up until it listens again',
        {error: error?.message ?? 'connection ended', retry_in_ms: delayMs},
      );
    }
    this.attempt++;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      if (!this.stopped) this.connect().catch(() => undefined);
    }, delayMs);
  }
}
