import {
  BindingScope,
  Context,
  CoreBindings,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import {runsRole} from '../roles';
import type {AppConfig} from '../config';
import {
  AppBindings,
  ConsumerBindings,
  ProducerBindings,
  StayAliveBindings,
} from '../keys';
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

  constructor(
    @inject(AppBindings.CONFIG) config: AppConfig,
    @inject(CoreBindings.APPLICATION_INSTANCE) private readonly app: Context,
  ) {
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
    this.inFlight ??= runChecks(this.checks, CHECK_TIMEOUT_MS).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  async stop(): Promise<void> {
    await this.postgres.close();
  }

  private producer(): CheckResult {
    const observer = this.app.getSync(ProducerBindings.OBSERVER, {
      optional: true,
    });
    if (!observer) return {status: 'down', reason: 'producer is not running'};
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
