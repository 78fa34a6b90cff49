import {getPriority} from 'node:os';
import {TaskSchedulerApplication, runsRole} from '../application';
import type {AppConfig} from '../config';
import {HealthBindings} from '../keys';
import {settleDebugColours} from '../logging/debug-colours';
import {createLogger, Logger} from '../logging/logger';
import {trapShutdownSignals} from './shutdown';
import {shutdownDeadlineMs} from './shutdown-deadline';

function exitOnCrash(logger: Logger): void {
  const crash = (kind: string) => (error: unknown) => {
    logger.error(kind, {
      error: (error as Error)?.message ?? String(error),
      stack: (error as Error)?.stack,
    });
    // Let the log line reach stdout before exiting.
    setImmediate(() => process.exit(1));
  };
  process.on('uncaughtException', crash('Uncaught exception'));
  process.on('unhandledRejection', crash('Unhandled rejection'));
}

function warnAboutUnsafeDefaults(config: AppConfig, logger: Logger): void {
  if (config.nodeEnv !== 'production') {
    logger.warn(
      'NODE_ENV is not production: error responses include stack traces. Set NODE_ENV=production in production.',
      {node_env: config.nodeEnv},
    );
  }
}

export async function main(
  config: AppConfig,
): Promise<TaskSchedulerApplication> {
  settleDebugColours();
  const logger = createLogger({
    level: config.logLevel,
    service: config.serviceName,
  });
  exitOnCrash(logger);
  const app = new TaskSchedulerApplication(config, logger);
  trapShutdownSignals({
    logger,
    stop: () => app.stop(),
    graceMs: shutdownDeadlineMs(config),
  });
  warnAboutUnsafeDefaults(config, logger);
  await app.start();
  const healthPort = app.getSync(HealthBindings.SERVER, {optional: true})
    ?.server?.port;
  logger.info('Service started', {
    mode: config.appMode,
    node_env: config.nodeEnv,
    ...(runsRole(config.appMode, 'api') ? {url: app.restServer.url} : {}),
    ...(healthPort !== undefined ? {health_port: healthPort} : {}),
    // Read back: what the main thread really runs at.
    ...(config.processNice !== undefined ? {process_nice: getPriority()} : {}),
  });
  return app;
}
