import type {ChildProcess} from 'node:child_process';
import type {Logger} from '../logging/logger';
import {
  DEFAULT_OUTPUT_MAX_BYTES,
  logBoundedLines,
  OutputBudget,
} from './bounded-output';
import {TaskAborted, TaskFailure} from './task-executor';

export interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface WatchOptions {
  /** "worker" or "report": names the child in reasons. */
  kind: string;
  logger: Logger;
  timeoutMs: number;
  /** After SIGTERM, how long before SIGKILL. */
  killGraceMs: number;
  signal: AbortSignal;
  /** Output logged per run (stdout and stderr together); the rest is dropped. */
  outputMaxBytes?: number;
  /** Called once when the run's output is cut. */
  onOutputCut?: () => void;
}

/**
 * Watches a spawned or forked child: logs each output line (every log record
 * carries its time), stops it on timeout or shutdown (SIGTERM, then SIGKILL
 * after a grace) and settles when it has exited and its output is read.
 * A timeout, a signal or an exec failure becomes a TaskFailure; a shutdown a
 * TaskAborted. The exit code is returned for the caller to judge.
 */
export function watchChild(
  child: ChildProcess,
  options: WatchOptions,
): Promise<ChildOutcome> {
  const budget = new OutputBudget(
    options.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES,
    options.onOutputCut,
  );
  for (const name of ['stdout', 'stderr'] as const) {
    logBoundedLines(child[name], {name, logger: options.logger, budget});
  }
  let stoppedBy: 'timeout' | 'shutdown' | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const terminate = (reason: 'timeout' | 'shutdown') => {
    if (stoppedBy !== undefined || child.exitCode !== null) return;
    stoppedBy = reason;
    child.kill('SIGTERM');
    killTimer = setTimeout(() => child.kill('SIGKILL'), options.killGraceMs);
  };
  const timeout = setTimeout(() => terminate('timeout'), options.timeoutMs);
  const onAbort = () => terminate('shutdown');
  options.signal.addEventListener('abort', onAbort);
  if (options.signal.aborted) onAbort();

  return new Promise<ChildOutcome>((resolve, reject) => {
    const settle = () => {
      clearTimeout(timeout);
      clearTimeout(killTimer);
      options.signal.removeEventListener('abort', onAbort);
    };
    child.once('error', error => {
      settle();
      const code = (error as NodeJS.ErrnoException).code;
      reject(
        new TaskFailure(
          code === 'ENOENT'
            ? `${options.kind} executable not found`
            : code === 'EACCES'
              ? `${options.kind} executable is not executable (EACCES)`
              : `${options.kind} could not start: ${error.message}`,
        ),
      );
    });
    child.once('close', (code, signal) => {
      settle();
      if (stoppedBy === 'shutdown') {
        reject(new TaskAborted(`${options.kind} stopped by shutdown`));
      } else if (stoppedBy === 'timeout') {
        reject(
          new TaskFailure(
            `${options.kind} timed out after ${options.timeoutMs} ms (${signal ?? `exit ${code}`})`,
          ),
        );
      } else if (signal) {
        reject(new TaskFailure(`${options.kind} was killed by ${signal}`));
      } else {
        resolve({code, signal});
      }
    });
  });
}
