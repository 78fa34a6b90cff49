import {LifeCycleObserver} from '@loopback/core';
import {componentLogger, Logger} from '../logging/logger';

const HEARTBEAT_MS = 60_000;

export const ROLE_CONTEXTS = {
  worker: 'cron-worker',
} as const;

/**
 * Announces a background role starting and stopping. The consumer issue
 * replaces it with the real component; until then the roles
 * boot, report themselves and shut down cleanly.
 */
export class RoleObserver implements LifeCycleObserver {
  private readonly logger: Logger;
  /** Holds the event loop open: a role runs until it is stopped. */
  private heartbeat?: NodeJS.Timeout;

  constructor(
    private readonly role: string,
    logger: Logger,
  ) {
    this.logger = componentLogger(logger, role);
  }

  start(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(
      () => this.logger.debug(`${this.role} alive`),
      HEARTBEAT_MS,
    );
    this.logger.info(`${this.role} started`);
  }

  stop(): void {
    if (!this.heartbeat) return;
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    this.logger.info(`${this.role} stopped`);
  }
}
