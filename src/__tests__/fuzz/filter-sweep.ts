import {FILTER_OPERATORS} from '../../validation/filter-rules';
import type {ApiDescription, FuzzOperation} from './api-operations';
import type {QueryPairs} from './query-arbitrary';
import type {FuzzRequest} from './request-arbitrary';

/**
 * One operand of every JSON type, plus the values that reach a special path:
 * an integer beyond int32, a LIKE wildcard, a date and a `/…/` literal
 * JavaScript cannot compile.
 */
export const SWEEP_OPERANDS: readonly unknown[] = [
  null,
  true,
  1.5,
  2147483648,
  'a%',
  '2027-01-01T00:00:00Z',
  '/a(/',
  [1, 2],
  ['a', null],
  {},
];

/** A bare condition (no operator) and every operator the service documents. */
const OPERATORS: ReadonlyArray<string | undefined> = [
  undefined,
  ...FILTER_OPERATORS,
];

function filterQuery(filter: object): QueryPairs {
  return [['filter', JSON.stringify(filter)]];
}

function sweepOf(operation: FuzzOperation): FuzzRequest[] {
  const properties = Object.keys(operation.modelSchema?.properties ?? {});
  const request = (query: QueryPairs): FuzzRequest => ({
    operation: operation.id,
    method: 'GET',
    path: operation.path,
    query,
    auth: 'admin',
  });
  return properties.flatMap(property => [
    request(filterQuery({fields: [property]})),
    request(filterQuery({order: `${property} DESC`})),
    ...OPERATORS.flatMap(operator =>
      SWEEP_OPERANDS.map(operand =>
        request(
          filterQuery({
            where: {
              [property]: operator ? {[operator]: operand} : operand,
            },
          }),
        ),
      ),
    ),
  ]);
}

/**
 * Every filterable property of every list operation the OpenAPI document
 * describes, with every operator and operands of every JSON type: a new
 * model or column is swept without anyone editing the fuzzer.
 */
export function filterSweep(api: ApiDescription): FuzzRequest[] {
  return api.operations
    .filter(
      operation =>
        operation.method === 'GET' &&
        operation.modelSchema !== undefined &&
        operation.parameters.some(p => p.json && p.in === 'query'),
    )
    .flatMap(sweepOf);
}
