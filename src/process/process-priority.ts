import {readdirSync} from 'node:fs';
import os from 'node:os';
import {ConfigError} from '../config/parsers';

/** The nice values Linux (and POSIX) know: -20 (first) to 19 (last). */
export const NICE_MIN = -20;
export const NICE_MAX = 19;

/** Where the process stands now, and how it is changed (a test's stand-in). */
export interface PriorityControl {
  current(): number;
  setEveryThread(nice: number): void;
}

/**
 * Gives this process the CPU priority PROCESS_NICE asks for, before the
 * application loads. On a host where workers share the cores with the
 * producer, the producer's minute (claims, publishes, confirms) is what
 * every run waits for, while tasks are throughput. Beside four busy
 * workers on two cores, a producer at -10 had 10,000 runs confirmed after
 * 1.45-2.32 s (median 1.71 s, nine runs) against 1.79-2.30 s (median
 * 2.06 s, five) at the default: a gain, within a wide spread
 * (BENCHMARKS.md, issue 17). Nice orders a process only
 * against others of its cgroup and (with autogroup) session: separate
 * containers or systemd units need CPU weights (docs/deployment.md).
 *
 * Going below the value the process started at needs CAP_SYS_NICE or an
 * RLIMIT_NICE that allows it; going above needs nothing. Refused, the
 * process stops rather than run at a priority the operator did not ask
 * for. Every thread of the process gets it (see setEveryThreadPriority),
 * and what it starts later inherits it: threads, and processes (a worker
 * task's program, a stay-alive child), as under `nice`.
 */
export function applyProcessPriority(
  nice: number | undefined,
  control: PriorityControl = {
    current: () => os.getPriority(),
    setEveryThread: setEveryThreadPriority,
  },
): void {
  if (nice === undefined) return;
  const wanted = nice === 0 ? 0 : nice; // -0 reads as 0 in the message
  const startedAt = control.current();
  try {
    control.setEveryThread(wanted);
  } catch (error) {
    // Node's SystemError carries the system's code in `info`.
    const {code, info} = error as {code?: string; info?: {code?: string}};
    const reason = info?.code ?? code;
    const privilege =
      wanted < startedAt && (reason === 'EACCES' || reason === 'EPERM')
        ? `; a value below the one the process started at (${startedAt}) needs CAP_SYS_NICE or an RLIMIT_NICE that allows it (ulimit -e), which an unprivileged user (as the image's) lacks`
        : '';
    throw new ConfigError(
      'PROCESS_NICE',
      `(${wanted}) cannot be applied: ${(error as Error).message}${privilege}`,
    );
  }
}

/**
 * Linux keeps a nice value per thread, and setpriority() on the process
 * sets the calling thread's only. The runtime's helper threads, started
 * before any of our code runs, do its garbage collection and compilation
 * beside the main thread, which waits for them: left behind, they kept
 * the producer waiting on the workers' CPU all the same. So every thread
 * listed in /proc/self/task gets the value, the calling thread first (its
 * refusal is the process's). Elsewhere: the process's call, as it is.
 */
export function setEveryThreadPriority(value: number): void {
  // Node's setPriority aborts the process on -0 (Number('-0') is one).
  const nice = value === 0 ? 0 : value;
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
