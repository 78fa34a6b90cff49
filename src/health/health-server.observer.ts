import {
  BindingScope,
  inject,
  lifeCycleObserver,
  LifeCycleObserver,
} from '@loopback/core';
import type {AppConfig} from '../config';
import {
  AppBindings,
  HealthBindings,
  LoggingBindings,
  MetricsBindings,
} from '../keys';
import type {Metrics} from '../metrics/metrics';
import {componentLogger, Logger} from '../logging/logger';
import {HealthServer} from './health-server';
import type {ReadinessService} from './readiness.service';

/**
 * Runs the HEALTH_PORT server when the variable is set: the only way to probe
 * the scheduler, worker and stay-alive modes, and one fixed probe port for
 * every container whatever its mode.
 */
@lifeCycleObserver('health', {scope: BindingScope.SINGLETON})
export class HealthServerObserver implements LifeCycleObserver {
  private readonly logger: Logger;
  server?: HealthServer;

  constructor(
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(HealthBindings.READINESS)
    private readonly readiness: ReadinessService,
    @inject(MetricsBindings.METRICS, {optional: true})
    private readonly metrics?: Metrics,
  ) {
    this.logger = componentLogger(logger, 'health');
  }

  async start(): Promise<void> {
    if (this.config.healthPort === undefined) return;
    this.server = new HealthServer({
      host: this.config.host,
      port: this.config.healthPort,
      basePath: this.config.apiBasePath,
      ready: () => this.readiness.check(),
      metrics: this.metrics ? () => this.metrics!.text() : undefined,
      logger: this.logger,
    });
    await this.server.start();
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }
}
