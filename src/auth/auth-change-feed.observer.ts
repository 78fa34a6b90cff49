import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {AppConfig} from '../config';
import {AppBindings, AuthBindings, LoggingBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {AuthChangeFeed} from './auth-change-feed';
import type {AuthUserCache} from './user-cache';

/**
 * The session the feed listens on: LISTEN needs a session of its own, which
 * a transaction pooler does not keep; behind one, DATABASE_DIRECT_URL's.
 * Undefined when there is none: the cache then stays off.
 */
export function authFeedUrl(
  config: Pick<
    AppConfig,
    'databasePoolMode' | 'databaseUrl' | 'databaseDirectUrl'
  >,
): string | undefined {
  if (config.databasePoolMode === 'session') return config.databaseUrl;
  return config.databaseDirectUrl === config.databaseUrl
    ? undefined
    : config.databaseDirectUrl;
}

/** Runs the API's AuthChangeFeed, which the user cache depends on. */
@lifeCycleObserver('roles', {scope: BindingScope.SINGLETON})
export class AuthChangeFeedObserver implements LifeCycleObserver {
  private feed?: AuthChangeFeed;
  private readonly logger: Logger;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(AuthBindings.USER_CACHE) private readonly cache: AuthUserCache,
    @inject(LoggingBindings.LOGGER) logger: Logger,
  ) {
    this.logger = componentLogger(logger, 'auth');
  }

  async start(): Promise<void> {
    if (this.cache.ttlMs === 0) return;
    const url = authFeedUrl(this.config);
    if (!url) {
      this.logger.info(
        'Auth user cache off: behind a transaction pooler it needs DATABASE_DIRECT_URL to hear changes',
      );
      return;
    }
    this.feed = new AuthChangeFeed(url, this.cache, this.logger);
    await this.feed.start();
  }

  async stop(): Promise<void> {
    await this.feed?.stop();
  }
}
