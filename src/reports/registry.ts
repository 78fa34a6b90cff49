import type {ReportDefinition} from './report';
import {ReportInputError} from './report';
import {ExecutionsReport} from './definitions/executions.report';
import {FailedTasksReport} from './definitions/failed-tasks.report';
import {SchedulerInventoryReport} from './definitions/scheduler-inventory.report';
import {SelfCheckReport} from './definitions/self-check.report';

/**
 * Every report the service can run, by class name. A request or a task names
 * a report; it is looked up here and never turned into a path to require().
 */
export const REPORT_REGISTRY: Readonly<
  Record<string, ReportDefinition<unknown>>
> = {
  ExecutionsReport,
  FailedTasksReport,
  SchedulerInventoryReport,
  SelfCheckReport,
};

export function reportNames(): string[] {
  return Object.keys(REPORT_REGISTRY).sort();
}

export function findReport(controller: unknown): ReportDefinition<unknown> {
  const name = typeof controller === 'string' ? controller : '';
  if (!Object.prototype.hasOwnProperty.call(REPORT_REGISTRY, name)) {
    throw new ReportInputError(
      `Unknown report controller ${JSON.stringify(controller ?? null)}; known: ${reportNames().join(', ')}`,
      [
        {
          path: '/controller',
          code: 'enum',
          message: `must be one of ${reportNames().join(', ')}`,
        },
      ],
    );
  }
  return REPORT_REGISTRY[name];
}
