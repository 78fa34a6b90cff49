import type {Logger} from '../logging/logger';

/** Longest line logged, in bytes; the rest of a longer line is dropped. */
export const MAX_LINE_BYTES = 4000;

/** TASK_OUTPUT_MAX_BYTES unless set: 1 MiB of output per run. */
export const DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;

/**
 * How much output one run may log, shared by its stdout and stderr. Once
 * spent, further output is read and dropped; `onCut` is called once, the
 * first time any output is dropped (this, or the rest of a long line).
 */
export class OutputBudget {
  private used = 0;
  cut = false;

  constructor(
    readonly maxBytes: number,
    private readonly onCut: () => void = () => undefined,
  ) {}

  /** How many of `bytes` may still be logged; marks the output cut when short. */
  take(bytes: number): number {
    const granted = Math.max(0, Math.min(bytes, this.maxBytes - this.used));
    this.used += granted;
    if (granted < bytes) this.markCut();
    return granted;
  }

  /** Some output was dropped (a long line's rest, or past the budget). */
  markCut(): void {
    if (this.cut) return;
    this.cut = true;
    this.onCut();
  }

  get exhausted(): boolean {
    return this.used >= this.maxBytes;
  }
}

export interface BoundedLinesOptions {
  /** "stdout" or "stderr". */
  name: string;
  logger: Logger;
  budget: OutputBudget;
  msg?: string;
}

/**
 * Logs a child's output line by line from raw chunks, never holding more
 * than one cut line (MAX_LINE_BYTES) in memory, whatever the child prints:
 * a longer line is cut and the rest dropped up to the next newline, and
 * output beyond the run's budget is read and dropped.
 */
export function logBoundedLines(
  stream: NodeJS.ReadableStream | null,
  options: BoundedLinesOptions,
): void {
  if (!stream) return;
  const {name, logger, budget} = options;
  const msg = options.msg ?? 'Task output';
  const parts: Buffer[] = [];
  let held = 0;
  let lineCut = false;
  let pending = false;

  const emit = () => {
    let line = Buffer.concat(parts, held);
    parts.length = 0;
    held = 0;
    const wasCut = lineCut;
    lineCut = false;
    pending = false;
    if (wasCut) budget.markCut();
    // The newline counts too, so an empty line still costs a byte.
    const granted = budget.take(line.length + 1);
    if (granted === 0) return;
    const budgetCut = granted <= line.length;
    if (budgetCut) line = line.subarray(0, granted);
    const text = line.toString('utf8').replace(/\r$/, '');
    const shortened = wasCut || budgetCut;
    logger.info(msg, {stream: name, line: shortened ? `${text}…` : text});
  };

  const append = (chunk: Buffer) => {
    if (chunk.length === 0) return;
    pending = true;
    if (lineCut || budget.exhausted) {
      lineCut = true;
      return;
    }
    const room = MAX_LINE_BYTES - held;
    if (chunk.length > room) {
      parts.push(Buffer.from(chunk.subarray(0, room)));
      held += room;
      lineCut = true;
    } else {
      // Copied: a slice would keep the whole chunk alive.
      parts.push(Buffer.from(chunk));
      held += chunk.length;
    }
  };

  stream.on('data', (data: Buffer | string) => {
    if (budget.exhausted) {
      // Nothing more will be logged: drop the chunk unread, without
      // splitting it into lines (23 million short lines per GiB would be
      // as many objects for the garbage collector).
      if (data.length > 0) budget.markCut();
      parts.length = 0;
      held = 0;
      pending = false;
      return;
    }
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) break;
      append(chunk.subarray(start, end));
      pending = true;
      emit();
      start = end + 1;
    }
    append(chunk.subarray(start));
  });
  stream.on('end', () => {
    if (pending) emit();
  });
}
