import {readdirSync} from 'node:fs';
import os from 'node:os';
import {ConfigError} from '../config/parsers';

/** The nice values Linux (and POSIX) know: -20 (first) to 19 (last). */
export const NICE_MIN = -20;
export const NICE_MAX = 19;

/**
 * Gives this process the CPU priority PROCESS_NICE asks for, before the
 * application loads. On a host where workers share the cores with the
 * producer, the producer's minute (claims, publishes, confirms) is what
 * every run waits for, while tasks are throughput: a producer at -10 had
 * its 10,000 runs confirmed in 1.5-1.7 s instead of 2.2-2.3 s beside four
 * busy workers (BENCHMARKS.md, issue 17). A positive value (a worker
 * yielding) needs no privilege; a negative one needs CAP_SYS_NICE (root, or
 * a container given that capability). Refused, the process stops rather
 * than run at a priority the operator did not ask for.
 *
 * Every thread of the process gets it (see everyThreadAt), and what it
 * starts later inherits it: threads, and processes (a worker task's
 * program, a stay-alive child), as under `nice`.
 */
export function applyProcessPriority(
  nice: number | undefined,
  setPriority: (priority: number) => void = everyThreadAt,
): void {
  if (nice === undefined) return;
  try {
    setPriority(nice);
  } catch (error) {
    // Node's SystemError carries the system's code in `info`.
    const {code, info} = error as {code?: string; info?: {code?: string}};
    const reason = info?.code ?? code;
    const privilege =
      nice < 0 && (reason === 'EACCES' || reason === 'EPERM')
        ? '; a negative value needs CAP_SYS_NICE (root, or a container started with that capability)'
        : '';
    throw new ConfigError(
      'PROCESS_NICE',
      `(${nice}) cannot be applied: ${(error as Error).message}${privilege}`,
    );
  }
}

/**
 * Linux keeps a nice value per thread, and setpriority() on the process
 * sets the calling thread's only. The runtime's helper threads, started
 * before any of our code runs, do its garbage collection and compilation
 * beside the main thread, which waits for them: left behind, they kept
 * the producer waiting on the workers' CPU all the same. So every thread
 * listed in /proc/self/task gets the value, the main thread first (its
 * refusal is the process's). Elsewhere: the process's call, as it is.
 */
function everyThreadAt(nice: number): void {
  os.setPriority(nice);
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    return;
  }
  for (const tid of threads) {
    try {
      os.setPriority(Number(tid), nice);
    } catch (error) {
      // A thread that ended since it was listed is no refusal.
      if ((error as {info?: {code?: string}}).info?.code !== 'ESRCH') {
        throw error;
      }
    }
  }
}
