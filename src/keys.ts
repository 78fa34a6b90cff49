import {BindingKey} from '@loopback/core';
import type {AppConfig} from './config';
import type {Logger} from './logging/logger';

export namespace AppBindings {
  /** The validated configuration the process started with. */
  export const CONFIG = BindingKey.create<AppConfig>('app.config');
}

export namespace LoggingBindings {
  /** The root structured logger; components derive child loggers from it. */
  export const LOGGER = BindingKey.create<Logger>('logging.logger');
}
