import type {Writable} from 'node:stream';

/** What stdout must offer to have its writes gathered. */
type Corkable = Pick<Writable, 'write' | 'cork' | 'uncork'>;

/** LOG_WRITE_MODE: `line` writes each log line at once, `turn` a turn's lines together. */
export const LOG_WRITE_MODES = ['line', 'turn'] as const;
export type LogWriteMode = (typeof LOG_WRITE_MODES)[number];

const gathered = new WeakSet<Corkable>();

/**
 * Makes the log lines `stream` (stdout) is given in one turn of the event
 * loop leave in one write. Each line is otherwise a system call of its own:
 * with many consumer channels, a third of a worker's CPU (BENCHMARKS.md).
 * The stream is corked at the turn's first line and uncorked once the turn's
 * I/O callbacks have run (`setImmediate`), and when the process exits
 * (stdout's writes to a pipe, a file or a terminal are synchronous there).
 * The trade: a process killed outright (SIGKILL, the OOM killer) loses the
 * lines of its last turn, which `line` would have written. Hence a setting.
 */
export function gatherTurnWrites(
  stream: Corkable,
  onExit: (flush: () => void) => void = flush => process.on('exit', flush),
): void {
  // Once per stream: a second wrap would cork twice and uncork once.
  if (gathered.has(stream)) return;
  gathered.add(stream);
  const write = stream.write;
  let corked = false;
  const flush = () => {
    if (!corked) return;
    corked = false;
    stream.uncork();
  };
  stream.write = function (this: Corkable, ...args: unknown[]) {
    if (!corked) {
      corked = true;
      stream.cork();
      setImmediate(flush);
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Corkable['write'];
  onExit(flush);
}
