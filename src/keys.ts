import {BindingKey} from '@loopback/core';
import type {AppConfig} from './config';
import type {TokenService} from './auth/token.service';
import type {TaskExecutor} from './executors/task-executor';
import type {Logger} from './logging/logger';
import type {TaskType} from './queue/task-message';
import type {ProducerObserver} from './producer/producer.observer';

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
}
