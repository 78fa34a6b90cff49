import {
  BindingScope,
  Context,
  CoreBindings,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import {runsRole} from '../process/app-mode';
import type {AppConfig} from '../config';
import {
  AppBindings,
  ConsumerBindings,
  LoggingBindings,
  ProducerBindings,
  StayAliveBindings,
} from '../keys';
import {componentLogger, Logger} from '../logging/logger';
import {FunctionCheck, PostgresCheck, RabbitMqCheck} from './dependency-checks';
import {
  CheckResult,
  loopFreshness,
  ReadinessCheck,
  ReadinessReport,
  runChecks,
} from './readiness';

/** A dependency that does not answer within this long counts as down. */
export const CHECK_TIMEOUT_MS = 3000;

/**
 * The readiness checks of the roles this process plays: PostgreSQL always,
 * RabbitMQ for the roles that use it, the producer's last tick and the
 * supervisor's last round. Concurrent requests share one run of the checks.
 */
@lifeCycleObserver('health', {scope: BindingScope.SINGLETON})
export class ReadinessService implements LifeCycleObserver {
  private readonly postgres: PostgresCheck;
  private readonly checks: ReadinessCheck[];
  private inFlight?: Promise<ReadinessReport>;
  /** The last reason logged per failing check, so a long outage logs once. */
  private readonly loggedReasons = new Map<string, string>();
  private readonly logger: Logger;

  constructor(
    @inject(AppBindings.CONFIG) config: AppConfig,
    @inject(CoreBindings.APPLICATION_INSTANCE) private readonly app: Context,
    @inject(LoggingBindings.LOGGER) logger: Logger,
  ) {
    this.logger = componentLogger(logger, 'health');
    const mode = config.appMode;
    this.postgres = new PostgresCheck(config.databaseUrl, CHECK_TIMEOUT_MS);
    this.checks = [this.postgres];
    if (mode !== 'stay-alive') {
      this.checks.push(new RabbitMqCheck(config.amqpUrl, CHECK_TIMEOUT_MS));
    }
    if (runsRole(mode, 'scheduler')) {
      this.checks.push(new FunctionCheck('producer', () => this.producer()));
    }
    if (runsRole(mode, 'worker')) {
      this.checks.push(new FunctionCheck('consumer', () => this.consumer()));
    }
    if (runsRole(mode, 'stay-alive')) {
      this.checks.push(new FunctionCheck('stay-alive', () => this.stayAlive()));
    }
  }

  check(): Promise<ReadinessReport> {
    this.inFlight ??= runChecks(this.checks, CHECK_TIMEOUT_MS)
      .then(report => {
        this.logChanges(report);
        return report;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }

  /** Responses name only the dependency; the reason is logged, once per change. */
  private logChanges(report: ReadinessReport): void {
    for (const [check, result] of Object.entries(report)) {
      const logged = this.loggedReasons.get(check);
      if (result.status === 'down' && logged !== result.reason) {
        this.loggedReasons.set(check, result.reason);
        this.logger.warn('Readiness check failed', {
          check,
          reason: result.reason,
        });
      } else if (result.status === 'up' && logged !== undefined) {
        this.loggedReasons.delete(check);
        this.logger.info('Readiness check recovered', {check});
      }
    }
  }

  async stop(): Promise<void> {
    await this.postgres.close();
  }

  private producer(): CheckResult {
    const observer = this.app.getSync(ProducerBindings.OBSERVER, {
      optional: true,
    });
    if (!observer) return {status: 'down', reason: 'producer is not running'};
    if (!observer.brokerConnected()) {
      return {
        status: 'down',
        reason:
          'producer has no broker connection: due runs are claimed and wait for the sweeper',
      };
    }
    return loopFreshness(
      'producer tick',
      observer.lastTickFinishedAt(),
      observer.now(),
    );
  }

  /** A worker process with no live subscription takes no tasks, however healthy its connections. */
  private consumer(): CheckResult {
    const observer = this.app.getSync(ConsumerBindings.OBSERVER, {
      optional: true,
    });
    if (!observer) return {status: 'down', reason: 'consumer is not running'};
    const reason = observer.notConsuming();
    return reason ? {status: 'down', reason} : {status: 'up'};
  }

  private stayAlive(): CheckResult {
    const supervisor = this.app.getSync(StayAliveBindings.OBSERVER, {
      optional: true,
    })?.supervisor;
    if (!supervisor) {
      return {status: 'down', reason: 'stay-alive supervisor is not running'};
    }
    const last = supervisor.lastReconciledAt;
    return loopFreshness(
      'stay-alive reconciliation',
      last === undefined ? undefined : new Date(last),
      new Date(supervisor.now()),
    );
  }
}
