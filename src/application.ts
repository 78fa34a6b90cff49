import {assertJsonDepth} from './middleware/json-depth';
import {
  AuthenticationComponent,
  registerAuthenticationStrategy,
} from '@loopback/authentication';
import {
  AuthorizationBindings,
  AuthorizationComponent,
  AuthorizationDecision,
  AuthorizationTags,
} from '@loopback/authorization';
import {
  ApplicationConfig,
  BindingScope,
  createBindingFromClass,
} from '@loopback/core';
import {RepositoryMixin} from '@loopback/repository';
import {
  RestApplication,
  RestBindings,
  RestMiddlewareGroups,
} from '@loopback/rest';
import {
  CanonicalParseParamsMiddlewareProvider,
  PARSE_PARAMS_MIDDLEWARE_KEY,
} from './routing/parse-params.middleware';
import {QuietRegExpRouter} from './routing/quiet-regexp-router';
import {
  RestExplorerBindings,
  RestExplorerComponent,
} from '@loopback/rest-explorer';
import type express from 'express';
import path from 'node:path';
import type {AppConfig} from './config';
import {AuthController} from './controllers/auth.controller';
import {SessionController} from './controllers/session.controller';
import {CurrentUserController} from './controllers/current-user.controller';
import {SystemRunsController} from './controllers/system-runs.controller';
import {SchedulerTimingController} from './controllers/scheduler-timing.controller';
import {SchedulerRunController} from './controllers/scheduler-run.controller';
import {SchedulerBulkController} from './controllers/scheduler-bulk.controller';
import {SchedulerBackfillController} from './controllers/scheduler-backfill.controller';
import {SystemStatusController} from './controllers/system-status.controller';
import {securityHeaders} from './middleware/security-headers';
import {loginFastRefusal} from './middleware/login-fast-refusal';
import {KnownLocks} from './auth/login-throttle';
import {FailedTaskRedriveController} from './controllers/failed-task-redrive.controller';
import {NotificationInboxController} from './controllers/notification-inbox.controller';
import {PingController} from './controllers/ping.controller';
import {
  CalendarImportController,
  MAX_ICALENDAR_BYTES,
} from './controllers/calendar-import.controller';
import {ReportGenerationController} from './controllers/report-generation.controller';
import {HttpTargetSecretController} from './controllers/http-target-secret.controller';
import {WebhookActionsController} from './controllers/webhook-actions.controller';
import {SchedulerHistoryController} from './controllers/scheduler-history.controller';
import {
  POSTGRES_DATASOURCE_CONFIG,
  PostgresDataSource,
} from './datasources/postgres.datasource';
import {JwtStrategy} from './auth/jwt.strategy';
import {ApiKeyStrategy} from './auth/api-key.strategy';
import {AuthChangeFeedObserver} from './auth/auth-change-feed.observer';
import {AuthUserCache} from './auth/user-cache';
import {AuthCacheResetMiddlewareProvider} from './middleware/auth-cache-reset.middleware';
import {ApiKeyController} from './controllers/api-key.controller';
import {RoleAuthorizerProvider} from './auth/role.authorizer';
import {loadInstallationJwtSecret} from './auth/installation-secret';
import {TokenService} from './auth/token.service';
import {defineCrudController} from './crud/crud-controller.factory';
import {defineRepository} from './crud/repositories';
import {
  AppBindings,
  AuthBindings,
  HealthBindings,
  LoggingBindings,
  MetricsBindings,
} from './keys';
import {metricsFor} from './metrics/process-metrics';
import {HealthController} from './controllers/health.controller';
import {HealthServerObserver} from './health/health-server.observer';
import {ReadinessService} from './health/readiness.service';
import {StayAliveComponent} from './stay-alive/stay-alive.component';
import {ConsumerComponent} from './consumer/consumer.component';
import {ProducerComponent} from './producer/producer.component';
import {BrokerService} from './queue/broker.service';
import {ReportGenerationService} from './reports/report-generation.service';
import {RESOURCES} from './resources';
import type {Logger} from './logging/logger';
import {answerClientErrors} from './middleware/client-error';
import {ErrorResponseProvider} from './middleware/error-response';
import {mountOutsideApi} from './middleware/outside-api';
import {RequestLoggingMiddlewareProvider} from './middleware/request-logging.middleware';
import {HttpMetricsMiddlewareProvider} from './middleware/http-metrics.middleware';
import {RequestIdMiddlewareProvider} from './middleware/request-id.middleware';
import {MetricsController} from './controllers/metrics.controller';
import {BearerSecurityEnhancer} from './openapi/bearer-security.enhancer';
import {WebhookEventsEnhancer} from './openapi/webhook-events.enhancer';
import {ApiInfoEnhancer} from './openapi/api-info.enhancer';
import {SERVICE_TITLE} from './about/service-info';
import {ErrorResponsesEnhancer} from './openapi/error-responses.enhancer';
import {ErrorStatusesEnhancer} from './openapi/error-statuses.enhancer';

/** The Angular console, built by `npm run build` next to the compiled service. */
export const CONSOLE_DIR = path.resolve(__dirname, 'console/browser');

import {runsRole} from './process/app-mode';

export {runsRole};

/**
 * The one application. `APP_MODE` decides what it runs: the HTTP API, the
 * cron-scheduler producer, the cron-worker consumer, the stay-alive
 * supervisor, or all of them.
 */
export class TaskSchedulerApplication extends RepositoryMixin(RestApplication) {
  /** Sign-in locks this process has seen (see KnownLocks). */
  private readonly knownLocks = new KnownLocks();

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
        requestBodyParser: {
          // Only iCalendar imports take text; 1 MiB is their documented limit.
          text: {limit: MAX_ICALENDAR_BYTES},
          json: {
            limit: appConfig.requestBodyLimit,
            verify: (_request: unknown, _response: unknown, body: Buffer) =>
              assertJsonDepth(body),
          },
        },
        // A relative server (the base path): a server built from Host or
        // X-Forwarded-Host would let a request point the explorer elsewhere.
        openApiSpec: {setServersFromRequest: false},
        // X-Forwarded-For (client address for login throttling) and
        // X-Forwarded-Proto only from the one proxy TRUST_PROXY vouches for.
        expressSettings: {
          'x-powered-by': false,
          'trust proxy': appConfig.trustProxy ? 1 : false,
        },
        // Same origin only unless CORS_ORIGINS lists browsers' origins.
        cors: {
          origin:
            appConfig.corsOrigins.length > 0 ? appConfig.corsOrigins : false,
          methods: 'GET,HEAD,PUT,PATCH,POST,DELETE',
          allowedHeaders: [
            'Authorization',
            'Content-Type',
            'X-Change-Reason',
            'X-Request-Id',
          ],
          exposedHeaders: ['Retry-After', 'X-Request-Id'],
          credentials: false,
          maxAge: 600,
          preflightContinue: false,
          optionsSuccessStatus: 204,
        },
        gracePeriodForClose: 5000,
        ...options.rest,
      },
      // main() handles signals itself so that a clean stop exits with code 0.
      shutdown: {signals: []},
    });

    this.bind(AppBindings.CONFIG).to(appConfig);
    this.bind(LoggingBindings.LOGGER).to(logger);
    this.bind(MetricsBindings.METRICS).to(metricsFor(appConfig));
    this.bind(POSTGRES_DATASOURCE_CONFIG).to({
      url: appConfig.databaseUrl,
      statementTimeoutMs: appConfig.apiStatementTimeoutMs,
      poolMode: appConfig.databasePoolMode,
      // The database enforces the cap too, against concurrent saves.
      transactionSettings: {
        'task_scheduler.stay_alive_max': String(appConfig.stayAlive.maxWorkers),
      },
    });
    // Everything is registered explicitly: nothing is discovered by scanning
    // dist/, where a stale compiled file could shadow a real controller.
    this.dataSource(PostgresDataSource);

    // Repositories hold no per-request state: one each, not one per request.
    for (const resource of RESOURCES) {
      this.repository(defineRepository(resource.model), {
        defaultScope: BindingScope.SINGLETON,
      });
    }
    this.setUpHttp(appConfig);
    if (runsRole(appConfig.appMode, 'scheduler')) {
      this.component(ProducerComponent);
    }
    if (runsRole(appConfig.appMode, 'worker')) {
      this.component(ConsumerComponent);
    }
    if (runsRole(appConfig.appMode, 'stay-alive')) {
      this.component(StayAliveComponent);
    }
    this.setUpHealth();
  }

  /** /health and /ready on the API, and on HEALTH_PORT when it is set. */
  private setUpHealth(): void {
    this.add(
      createBindingFromClass(ReadinessService, {
        key: HealthBindings.READINESS,
      }),
    );
    this.controller(HealthController);
    this.add(
      createBindingFromClass(HealthServerObserver, {
        key: HealthBindings.SERVER,
      }),
    );
  }

  /**
   * Starts every role, then lets the new HTTP server answer requests its
   * parser refuses with the uniform error body. A property, not a method,
   * because the mixin types `start` as one.
   */
  override start = async (): Promise<void> => {
    await this.loadJwtSecret();
    await super.start();
    const server = this.restServer.httpServer?.server;
    if (server) {
      answerClientErrors(server, this.logger.child({context: 'http'}));
    }
  };

  /**
   * Loads the installation's JWT secret early when JWT_SECRET is unset; with
   * PostgreSQL down the API still starts (health answers) and the first
   * request that needs a token tries again.
   */
  private async loadJwtSecret(): Promise<void> {
    if (!runsRole(this.appConfig.appMode, 'api')) return;
    const tokens = await this.get(AuthBindings.TOKEN_SERVICE);
    await tokens.ensureSecret().catch((error: Error) =>
      this.logger.warn('JWT signing secret not loaded yet', {
        context: 'auth',
        error: error.message,
      }),
    );
  }

  private setUpHttp(appConfig: AppConfig): void {
    // LoopBack's default trie router keeps path segments as keys of plain
    // objects, so a segment named `toString` or `constructor` matches an
    // Object.prototype member: a 500 for /schedulers/toString/executions and
    // a wrong 404 for /config/toString (found by the API fuzzer). The RegExp
    // router matches each route's pattern instead; ~60 routes cost nothing
    // once its eager debug formatting is gone (quiet-regexp-router.ts).
    this.bind(RestBindings.ROUTER).toClass(QuietRegExpRouter);
    // Integer parameters must be written as integers (`0x10`, `1e3` and a
    // fraction rounded away near 2^53 named other rows): canonical-integers.ts.
    this.add(
      createBindingFromClass(CanonicalParseParamsMiddlewareProvider, {
        key: PARSE_PARAMS_MIDDLEWARE_KEY,
      }),
    );
    this.bind(RestBindings.SequenceActions.REJECT).toProvider(
      ErrorResponseProvider,
    );
    this.middleware(RequestIdMiddlewareProvider);
    this.middleware(RequestLoggingMiddlewareProvider);
    this.middleware(HttpMetricsMiddlewareProvider);
    const headers = securityHeaders({
      trustProxy: appConfig.trustProxy,
      explorerPath: `${appConfig.apiBasePath}/explorer`,
    });
    // Ahead of CORS and LoopBack's own OpenAPI endpoints (openapi.json), which
    // answer from their group and would otherwise go out without them.
    this.expressMiddleware('middleware.securityHeaders', headers, {
      group: 'securityHeaders',
      downstreamGroups: [RestMiddlewareGroups.CORS],
    });
    this.expressMiddleware(
      'middleware.loginFastRefusal',
      loginFastRefusal({
        loginPath: `${appConfig.apiBasePath}/auth/login`,
        knownLocks: this.knownLocks,
        clock: () =>
          this.getSync(AuthBindings.CLOCK, {optional: true})?.() ?? new Date(),
      }),
    );
    this.setUpSecurity(appConfig);
    this.controller(AuthController);
    this.controller(SessionController);
    this.controller(CurrentUserController);
    this.controller(PingController);
    this.controller(SchedulerHistoryController);
    this.controller(SchedulerTimingController);
    this.controller(SchedulerRunController);
    this.controller(SchedulerBulkController);
    this.controller(SchedulerBackfillController);
    this.controller(SystemStatusController);
    this.controller(SystemRunsController);
    this.controller(MetricsController);
    this.controller(FailedTaskRedriveController);
    this.controller(CalendarImportController);
    this.controller(NotificationInboxController);
    this.service(BrokerService);
    this.controller(ReportGenerationController);
    this.controller(HttpTargetSecretController);
    this.controller(ApiKeyController);
    this.controller(WebhookActionsController);
    this.service(ReportGenerationService);
    for (const resource of RESOURCES) {
      this.controller(defineCrudController(resource));
    }
    this.add(createBindingFromClass(ErrorResponsesEnhancer));
    this.add(createBindingFromClass(ErrorStatusesEnhancer));
    this.add(createBindingFromClass(BearerSecurityEnhancer));
    this.add(createBindingFromClass(WebhookEventsEnhancer));
    this.add(createBindingFromClass(ApiInfoEnhancer));
    this.configure(RestExplorerBindings.COMPONENT).to({
      path: '/explorer',
      indexTitle: SERVICE_TITLE,
    });
    this.component(RestExplorerComponent);
    mountOutsideApi(this.restServer.requestHandler as express.Application, {
      securityHeaders: headers,
      consoleDir: CONSOLE_DIR,
      logger: this.logger.child({context: 'http'}),
      includeStack: appConfig.nodeEnv === 'development',
    });
  }

  /** Bearer tokens (401) and role checks (403) on every operation that asks. */
  private setUpSecurity(appConfig: AppConfig): void {
    const loadSecret = () =>
      loadInstallationJwtSecret(
        appConfig.databaseUrl,
        this.logger.child({context: 'auth'}),
      );
    this.bind(AuthBindings.TOKEN_SERVICE).to(
      new TokenService(appConfig.jwt, undefined, loadSecret),
    );
    this.bind(AuthBindings.KNOWN_LOCKS).to(this.knownLocks);
    this.bind(AuthBindings.USER_CACHE).to(
      new AuthUserCache(appConfig.authUserCacheMs),
    );
    if (runsRole(appConfig.appMode, 'api')) {
      this.lifeCycleObserver(AuthChangeFeedObserver);
      this.middleware(AuthCacheResetMiddlewareProvider);
    }
    this.component(AuthenticationComponent);
    registerAuthenticationStrategy(this, JwtStrategy);
    registerAuthenticationStrategy(this, ApiKeyStrategy);
    this.configure(AuthorizationBindings.COMPONENT).to({
      precedence: AuthorizationDecision.DENY,
      defaultDecision: AuthorizationDecision.DENY,
    });
    this.component(AuthorizationComponent);
    this.bind('authorizers.role')
      .toProvider(RoleAuthorizerProvider)
      .inScope(BindingScope.SINGLETON)
      .tag(AuthorizationTags.AUTHORIZER);
  }
}
