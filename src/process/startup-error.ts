import {ConfigError} from '../config';

/**
 * The one line written when the process cannot start, before a logger exists
 * (LOG_LEVEL itself may be what is wrong). Same JSON shape as the logs.
 */
export function startupErrorLine(
  error: unknown,
  service = 'task-scheduler',
): string {
  const message =
    error instanceof ConfigError
      ? `Invalid configuration: ${error.message}`
      : `Startup failed: ${(error as Error)?.message ?? String(error)}`;
  return `${JSON.stringify({
    level: 'error',
    time: new Date().toISOString(),
    pid: process.pid,
    service,
    msg: message,
    ...(error instanceof ConfigError ? {variable: error.variable} : {}),
  })}\n`;
}
