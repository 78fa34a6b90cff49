/** What a report class receives: the scheduler's report params, as the spec shapes them. */
export interface ReportRequest {
  controller: string;
  options_interface?: Record<string, unknown>;
  report_params?: Record<string, unknown>;
  scheduler_id?: number;
}

export interface ReportResult {
  summary: Record<string, unknown>;
}

export interface Report {
  run(request: ReportRequest): Promise<ReportResult>;
}
