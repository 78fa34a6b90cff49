import type {Report} from './report';
import {SelfCheckReport} from './self-check.report';

/**
 * Every report the service can run, by class name. A request or a task names
 * a report; it is looked up here and never turned into a path to require().
 */
export const REPORT_REGISTRY: Readonly<Record<string, new () => Report>> = {
  SelfCheckReport,
};

export function reportNames(): string[] {
  return Object.keys(REPORT_REGISTRY).sort();
}
