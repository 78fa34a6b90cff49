import type {TurnSharer} from '../process/turn-sharer';
import type {Pool} from 'pg';

/** What a report receives: the scheduler's report params, as the spec shapes them. */
export interface ReportRequest {
  controller: string;
  options_interface?: Record<string, unknown>;
  report_params?: Record<string, unknown>;
  scheduler_id?: number;
}

export type CellValue = string | number | boolean | Date | null;
export type ReportRow = Record<string, CellValue>;

export interface ReportColumn {
  key: string;
  header: string;
  type: 'text' | 'integer' | 'datetime';
  /** Relative width in PDF and Excel output. */
  width: number;
}

/** What a report's rows may depend on besides its params. */
export interface ReportDataContext {
  db: Pool;
  now: Date;
  timeZone: string;
  /** CRON_CATCHUP_MINUTES: whether a one-time run in the current minute still fires. */
  catchUpMinutes: number;
  /**
   * Shares the event loop between rows that take CPU (an instant report
   * runs in the API process); default: a new one on the real clock.
   */
  turns?: TurnSharer;
}

/**
 * One report class: a title, typed columns, a params check run at the
 * boundary (it throws ReportInputError) and the rows as an async stream, so
 * large reports are never held in memory.
 */
export interface ReportDefinition<P = unknown> {
  readonly title: string;
  readonly description: string;
  readonly columns: readonly ReportColumn[];
  /** `raw` has its template variables resolved already. */
  parseParams(
    raw: Record<string, unknown>,
    context: {timeZone: string; now: Date},
  ): P;
  rows(params: P, context: ReportDataContext): AsyncIterable<ReportRow>;
}

/** Bad input to a report (controller, options, params): a 422 at the API, a failure in a task. */
export class ReportInputError extends Error {
  override name = 'ReportInputError';
  readonly statusCode = 422;
  constructor(
    message: string,
    readonly details?: {path: string; code: string; message: string}[],
  ) {
    super(message);
  }
}
