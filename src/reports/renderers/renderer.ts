import type {Writable} from 'node:stream';
import {finished} from 'node:stream/promises';
import type {CellValue, ReportColumn, ReportRow} from '../report';

export interface RenderInput {
  title: string;
  /** Shown under the title in PDF and Excel, e.g. the period and run time. */
  subtitle: string;
  columns: readonly ReportColumn[];
  rows: AsyncIterable<ReportRow>;
}

/** Writes a report to `out` as it streams the rows; resolves with the row count once `out` is finished. */
export interface ReportRenderer {
  readonly contentType: string;
  readonly extension: string;
  render(input: RenderInput, out: Writable): Promise<number>;
}

/** One text form for every format: dates as ISO 8601 UTC, null as empty. */
export function cellText(value: CellValue | undefined): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

/**
 * `finished(out)` for a renderer that waits on it only at the end: its
 * failure (a write error, the size cap) is heard at once, since an unheard
 * rejection ends the process, and cuts short any wait `race` is given (the
 * zip writer's commit never settles once its stream has failed).
 */
export class OutputWatch {
  readonly done: Promise<void>;
  private readonly failed: Promise<never>;

  constructor(private readonly out: Writable) {
    this.done = finished(out);
    this.failed = new Promise<never>((_resolve, reject) => {
      this.done.catch(reject);
    });
    this.failed.catch(() => undefined);
  }

  race<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.failed]);
  }

  /** Throws the output's failure once it has failed: rendering more would go nowhere. */
  async check(): Promise<void> {
    if (this.out.destroyed) await this.done;
  }
}

/**
 * Renders with `render`, and closes `out` when rendering fails (the rows
 * cancelled by a timeout or the row cap, the output failed): the file's
 * descriptor must not outlive the report.
 */
export async function closingOnFailure<T>(
  out: Writable,
  render: (watch: OutputWatch) => Promise<T>,
): Promise<T> {
  const watch = new OutputWatch(out);
  try {
    return await render(watch);
  } catch (error) {
    out.destroy();
    throw error;
  }
}
