import type {Report, ReportRequest, ReportResult} from './report';

/**
 * Exercises the report pipeline end to end without touching data: it
 * completes, or fails with `report_params.fail_with` as its error, so
 * operators (and tests) can check the child-process protocol and retries.
 */
export class SelfCheckReport implements Report {
  async run(request: ReportRequest): Promise<ReportResult> {
    const params = request.report_params ?? {};
    if (typeof params.fail_with === 'string') {
      throw new Error(params.fail_with);
    }
    return {
      summary: {
        checked_at: new Date().toISOString(),
        instant:
          (request.options_interface?.delivery as {instant?: unknown})
            ?.instant ?? null,
      },
    };
  }
}
