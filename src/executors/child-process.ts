import type {ChildProcess} from 'node:child_process';
import {createInterface} from 'node:readline';
import type {Logger} from '../logging/logger';
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
}

const MAX_LINE = 4000;

/** Logs each line a child writes to `stream`, cut at 4000 characters. */
export function logLines(
  stream: NodeJS.ReadableStream | null,
  name: string,
  logger: Logger,
  msg = 'Task output',
) {
  if (!stream) return;
  createInterface({input: stream, crlfDelay: Infinity}).on('line', line =>
    logger.info(msg, {
      stream: name,
      line: line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line,
    }),
  );
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
  logLines(child.stdout, 'stdout', options.logger);
  logLines(child.stderr, 'stderr', options.logger);
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
