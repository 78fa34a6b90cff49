import type {ReportDefinition} from '../report';
import {optionalString, refuseUnknownParams} from '../params-check';

/**
 * Exercises the report pipeline end to end without touching data: one row,
 * or a failure with `report_params.fail_with` as its error, so operators
 * (and tests) can check the child-process protocol, delivery and retries.
 */
export const SelfCheckReport: ReportDefinition<{fail_with?: string}> = {
  title: 'Self check',
  description: 'One row; fails with report_params.fail_with when given',
  columns: [
    {key: 'check', header: 'Check', type: 'text', width: 20},
    {key: 'checked_at', header: 'Checked at', type: 'datetime', width: 20},
  ],
  parseParams(raw) {
    refuseUnknownParams(raw, ['fail_with']);
    return {fail_with: optionalString(raw, 'fail_with', 1000)};
  },
  async *rows(params, {now}) {
    if (params.fail_with !== undefined) throw new Error(params.fail_with);
    yield {check: 'report pipeline', checked_at: now};
  },
};
