import {ChildProcess, spawn} from 'node:child_process';

/**
 * The guardian: a shell that reads "+<group>" and "-<group>" lines and, when
 * its input ends (this process died, even by kill -9, or exited), kills every
 * group still listed. POSIX sh only, no other program: `kill -9 -<pgid>`
 * reaches the whole group.
 */
const GUARDIAN_SCRIPT = `
groups=' '
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups\${line#+} " ;;
    -*) drop=" \${line#-} "
        case "$groups" in *"$drop"*) groups="\${groups%%"$drop"*} \${groups#*"$drop"}" ;; esac ;;
  esac
done
for group in $groups; do kill -9 -"$group" 2>/dev/null; done
`;

/**
 * Kills the process groups of this process's running workers should this
 * process die without stopping them. PR_SET_PDEATHSIG (tied-spawn.ts)
 * reaches the worker itself, not what it started: a wrapper script's child
 * kept running after a consumer's kill -9 and did its work again beside the
 * redelivered copy. One guardian shell per process (not per task), in a
 * session of its own so a terminal's Ctrl-C or a group kill of this process
 * does not take it first; it never keeps this process alive.
 */
export class GroupGuard {
  private guardian?: ChildProcess;

  constructor(private readonly shell = '/bin/sh') {}

  /**
   * Starts the guardian, if none runs, before a child is spawned: the
   * child's group is then handed over right after its spawn, not after the
   * guardian's own (a death between the two left the group unguarded).
   */
  prepare(): void {
    this.running();
  }

  /** Guards the process group `pgid` (a detached child's pid) until `release`. */
  guard(pgid: number): void {
    this.send(`+${pgid}`);
  }

  release(pgid: number): void {
    this.send(`-${pgid}`);
  }

  /** The guardian's pid while one runs (tests). */
  get guardianPid(): number | undefined {
    return this.guardian?.pid;
  }

  /** Whether this process has seen its guardian exit (tests). */
  get guardianExited(): boolean {
    return (
      this.guardian !== undefined &&
      (this.guardian.exitCode !== null || this.guardian.signalCode !== null)
    );
  }

  /** Ends the guardian as if this process died (tests): it kills what is still guarded. */
  end(): void {
    this.guardian?.stdin?.end();
    this.guardian = undefined;
  }

  private send(line: string): void {
    const guardian = this.running();
    guardian?.stdin?.write(`${line}\n`);
  }

  private running(): ChildProcess | undefined {
    // Killed by a signal, it has no exit code but a signal code: not alive.
    const alive =
      this.guardian &&
      this.guardian.exitCode === null &&
      this.guardian.signalCode === null;
    if (alive) return this.guardian;
    let guardian: ChildProcess;
    try {
      guardian = spawn(this.shell, ['-c', GUARDIAN_SCRIPT], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
      });
    } catch {
      // No shell to spawn (not a POSIX system): pdeathsig alone, as before.
      return undefined;
    }
    // A guardian that died (killed by someone) is started again on the next
    // guard; a write to it meanwhile must not crash this process.
    guardian.on('error', () => undefined);
    guardian.stdin?.on('error', () => undefined);
    guardian.unref();
    (guardian.stdin as unknown as {unref?: () => void})?.unref?.();
    this.guardian = guardian;
    return guardian;
  }
}

/** The guard of this process's workers and stay-alive workers. */
export const groupGuard = new GroupGuard();
