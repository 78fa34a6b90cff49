import type {OpenApiSpec} from '@loopback/rest';
import winston from 'winston';
import {TaskSchedulerApplication} from '../application';
import {AppConfig, loadConfig} from '../config';
import {createLogger} from '../logging/logger';

/**
 * The application as it describes itself: the API role with the default
 * configuration (never the environment, so every machine describes the same
 * API), constructed but not started: no database, broker or port is touched.
 */
export function createDescribingApp(
  overrides: Partial<AppConfig> = {},
): TaskSchedulerApplication {
  const config: AppConfig = {...loadConfig({}), appMode: 'api', ...overrides};
  const logger = createLogger({
    level: 'error',
    service: config.serviceName,
    transports: [new winston.transports.Console({silent: true})],
  });
  return new TaskSchedulerApplication(config, logger);
}

/**
 * The OpenAPI document served at `<base path>/openapi.json`, with the
 * relative base path as its only server, as served, so a client generated
 * from it defaults to the same origin.
 */
export async function describeApi(
  app: TaskSchedulerApplication = createDescribingApp(),
): Promise<OpenApiSpec> {
  const document = await app.restServer.getApiSpec();
  return {...document, servers: [{url: app.appConfig.apiBasePath}]};
}
