import type {Writable} from 'node:stream';
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
