import type {Logger} from '../logging/logger';

export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

export interface ShutdownOptions {
  logger: Logger;
  stop: () => Promise<void>;
  /** After this long the process exits with code 1 even if stop() hangs. */
  graceMs: number;
  exit?: (code: number) => void;
}

/**
 * SIGTERM/SIGINT: log a warning, stop everything (channels, connections,
 * servers), log completion and exit 0. A second signal does not restart it.
 */
export function trapShutdownSignals(options: ShutdownOptions): void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    options.logger.warn('Shutdown requested', {signal});
    const timer = setTimeout(() => {
      options.logger.error('Shutdown timed out', {grace_ms: options.graceMs});
      exit(1);
    }, options.graceMs);
    timer.unref();
    try {
      await options.stop();
      options.logger.info('Shutdown complete', {signal});
      exit(0);
    } catch (error) {
      options.logger.error('Shutdown failed', {
        error: (error as Error).message,
        stack: (error as Error).stack,
      });
      exit(1);
    }
  };
  for (const signal of SHUTDOWN_SIGNALS) {
    process.on(signal, () => {
      shutdown(signal).catch(() => exit(1));
    });
  }
}
