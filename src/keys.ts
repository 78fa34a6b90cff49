import {BindingKey} from '@loopback/core';
import type {AppConfig} from './config';
import type {KnownLocks} from './auth/login-throttle';
import type {TokenService} from './auth/token.service';
import type {AuthUserCache} from './auth/user-cache';
import type {TaskExecutor} from './executors/task-executor';
import type {Logger} from './logging/logger';
import type {TaskType} from './queue/task-message';
import type {ProducerObserver} from './producer/producer.observer';
import type {ConsumerObserver} from './consumer/consumer.observer';
import type {StayAliveObserver} from './stay-alive/stay-alive.observer';
import type {ReadinessService} from './health/readiness.service';
import type {HealthServerObserver} from './health/health-server.observer';
import type {Metrics} from './metrics/metrics';

export namespace AppBindings {
  /** The validated configuration the process started with. */
  export const CONFIG = BindingKey.create<AppConfig>('app.config');
}

export namespace LoggingBindings {
  /** The root structured logger; components derive child loggers from it. */
  export const LOGGER = BindingKey.create<Logger>('logging.logger');
}

export namespace AuthBindings {
  /** Issues and verifies the API's bearer tokens. */
  export const TOKEN_SERVICE =
    BindingKey.create<TokenService>('auth.tokenService');
  /** This application's copy of the sign-in locks (see KnownLocks). */
  export const KNOWN_LOCKS = BindingKey.create<KnownLocks>('auth.knownLocks');
  /** The clock login throttling reads; tests bind their own. */
  export const CLOCK = BindingKey.create<() => Date>('auth.clock');
  /** The users behind bearer tokens, kept for AUTH_USER_CACHE_MS (see AuthUserCache). */
  export const USER_CACHE = BindingKey.create<AuthUserCache>('auth.userCache');
}

export namespace ProducerBindings {
  /** The producer's clock; tests bind their own. */
  export const CLOCK = BindingKey.create<() => Date>('producer.clock');
  /**
   * Simulated milliseconds per real millisecond of CLOCK (1 unless a test
   * clock runs fast): the ticker divides its waits by it.
   */
  export const CLOCK_RATE = BindingKey.create<number>('producer.clockRate');
  export const OBSERVER =
    BindingKey.create<ProducerObserver>('producer.observer');
}

export namespace ConsumerBindings {
  /** Executors to use instead of the built-in ones (benchmarks, tests). */
  export const EXECUTORS =
    BindingKey.create<Partial<Record<TaskType, TaskExecutor>>>(
      'consumer.executors',
    );
  export const OBSERVER =
    BindingKey.create<ConsumerObserver>('consumer.observer');
}

export namespace ReportBindings {
  /** The clock report templates and periods are read on; tests bind their own. */
  export const CLOCK = BindingKey.create<() => Date>('reports.clock');
}

export namespace StayAliveBindings {
  export const OBSERVER =
    BindingKey.create<StayAliveObserver>('stayAlive.observer');
}

export namespace HealthBindings {
  /** Runs the readiness checks of the roles this process plays. */
  export const READINESS =
    BindingKey.create<ReadinessService>('health.readiness');
  /** The HEALTH_PORT server of the modes without the API. */
  export const SERVER =
    BindingKey.create<HealthServerObserver>('health.server');
}

export namespace MetricsBindings {
  /** This application's Prometheus metrics (its own registry). */
  export const METRICS = BindingKey.create<Metrics>('metrics.metrics');
}
