import type {AnyObject} from '@loopback/repository';
import type {AppConfig} from '../config';
import type {HookContext} from '../crud/crud-resource';
import {reportRequestFor} from '../executors/report.executor';
import {AppBindings, ReportBindings} from '../keys';
import type {ErrorDetail} from '../middleware/error-mapping';
import {ReportInputError} from '../reports/report';
import {prepareReport} from '../reports/report-runner';
import {fieldError} from '../validation/validation-error';
import {repositoryOf} from './hook-helpers';

/**
 * A report scheduler's params get the same check POST /reports/generate
 * gives them (options shape, the catalog report's own report_params), so a
 * typo is a 422 now rather than a failed task at its first run. The check
 * runs on the request the consumer would build; template variables resolve
 * against the current time, which only decides whether they are valid.
 */
export async function reportParamErrors(
  record: AnyObject,
  ctx: HookContext,
): Promise<ErrorDetail[]> {
  if (record.report_id === undefined || record.report_id === null) return [];
  const reports = await repositoryOf(ctx, 'Report');
  const report = (await reports.findById(record.report_id)) as AnyObject;
  const config = await ctx.context.get<AppConfig>(AppBindings.CONFIG);
  const clock =
    (await ctx.context.get(ReportBindings.CLOCK, {optional: true})) ??
    (() => new Date());
  const params = (record.params ?? {}) as Record<string, unknown>;
  try {
    prepareReport(reportRequestFor(report.controller, params, 0), {
      now: clock(),
      timeZone: config.cronTimeZone,
      userId: (record.user_id as number | undefined) ?? null,
    });
    return [];
  } catch (error) {
    if (!(error instanceof ReportInputError)) throw error;
    if (error.details?.some(detail => detail.path === '/controller')) {
      return [
        fieldError(
          'report_id',
          'enum',
          `Report ${record.report_id} names controller ${JSON.stringify(report.controller)}, which is not a registered report`,
        ),
      ];
    }
    return (
      error.details ?? [{path: '', code: 'type', message: error.message}]
    ).map(detail => ({...detail, path: `/params${detail.path}`}));
  }
}
