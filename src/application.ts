import {BootMixin} from '@loopback/boot';
import {ApplicationConfig, BindingScope, CoreTags} from '@loopback/core';
import {RepositoryMixin} from '@loopback/repository';
import {RestApplication, RestBindings} from '@loopback/rest';
import {
  RestExplorerBindings,
  RestExplorerComponent,
} from '@loopback/rest-explorer';
import type express from 'express';
import path from 'node:path';
import type {AppConfig, AppMode} from './config';
import {POSTGRES_DATASOURCE_CONFIG} from './datasources/postgres.datasource';
import {AppBindings, LoggingBindings} from './keys';
import type {Logger} from './logging/logger';
import {ErrorResponseProvider} from './middleware/error-response';
import {mountOutsideApi} from './middleware/outside-api';
import {RequestLoggingMiddlewareProvider} from './middleware/request-logging.middleware';
import {ROLE_CONTEXTS, RoleObserver} from './roles/role.observer';

export const PUBLIC_DIR = path.resolve(__dirname, '../public');

export function runsRole(
  mode: AppMode,
  role: Exclude<AppMode, 'all'>,
): boolean {
  return mode === 'all' || mode === role;
}

/**
 * The one application. `APP_MODE` decides what it runs: the HTTP API, the
 * cron-scheduler producer, the cron-worker consumer, or all of them.
 */
export class TaskSchedulerApplication extends BootMixin(
  RepositoryMixin(RestApplication),
) {
  constructor(
    readonly appConfig: AppConfig,
    readonly logger: Logger,
    options: ApplicationConfig = {},
  ) {
    const servesHttp = runsRole(appConfig.appMode, 'api');
    super({
      ...options,
      rest: {
        host: appConfig.host,
        port: appConfig.port,
        basePath: appConfig.apiBasePath,
        // Background roles boot the same app but never open the HTTP port.
        listenOnStart: servesHttp,
        requestBodyParser: {json: {limit: appConfig.requestBodyLimit}},
        openApiSpec: {setServersFromRequest: true},
        expressSettings: {'x-powered-by': false},
        gracePeriodForClose: 5000,
        ...options.rest,
      },
      // main() handles signals itself so that a clean stop exits with code 0.
      shutdown: {signals: []},
    });
    this.projectRoot = __dirname;
    this.bootOptions = {
      controllers: {
        dirs: ['controllers'],
        extensions: ['.controller.js'],
        nested: true,
      },
      repositories: {dirs: ['repositories'], extensions: ['.repository.js']},
      datasources: {dirs: ['datasources'], extensions: ['.datasource.js']},
    };

    this.bind(AppBindings.CONFIG).to(appConfig);
    this.bind(LoggingBindings.LOGGER).to(logger);
    this.bind(POSTGRES_DATASOURCE_CONFIG).to({url: appConfig.databaseUrl});

    this.setUpHttp(appConfig);
    if (runsRole(appConfig.appMode, 'scheduler'))
      this.addRole(ROLE_CONTEXTS.scheduler);
    if (runsRole(appConfig.appMode, 'worker'))
      this.addRole(ROLE_CONTEXTS.worker);
  }

  private setUpHttp(appConfig: AppConfig): void {
    this.bind(RestBindings.SequenceActions.REJECT).toProvider(
      ErrorResponseProvider,
    );
    this.middleware(RequestLoggingMiddlewareProvider);
    this.configure(RestExplorerBindings.COMPONENT).to({path: '/explorer'});
    this.component(RestExplorerComponent);
    mountOutsideApi(this.restServer.requestHandler as express.Application, {
      publicDir: PUBLIC_DIR,
      logger: this.logger.child({context: 'http'}),
      includeStack: appConfig.nodeEnv === 'development',
    });
  }

  private addRole(role: string): void {
    this.bind(`roles.${role}`)
      .to(new RoleObserver(role, this.logger))
      .inScope(BindingScope.SINGLETON)
      .tag(CoreTags.LIFE_CYCLE_OBSERVER, {
        [CoreTags.LIFE_CYCLE_OBSERVER_GROUP]: 'roles',
      });
  }
}
