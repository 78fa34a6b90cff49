import fc from 'fast-check';
import type {FuzzOperation} from './api-operations';
import {BodyText, bodyFor} from './body-arbitrary';
import {pathValueFor, QueryPairs, queryFor} from './query-arbitrary';

/** Who sends the request: a real user of each role, nobody, or a forger. */
export const AUTH_KINDS = [
  'admin',
  'operator',
  'viewer',
  'none',
  'malformed',
  'forged',
] as const;
export type AuthKind = (typeof AUTH_KINDS)[number];

export interface FuzzRequest {
  operation: string;
  method: FuzzOperation['method'];
  /** Path under the API base, with path parameters filled in and encoded. */
  path: string;
  query: QueryPairs;
  body?: BodyText;
  auth: AuthKind;
}

const authKind: fc.Arbitrary<AuthKind> = fc.oneof(
  {weight: 8, arbitrary: fc.constant('admin' as const)},
  {weight: 3, arbitrary: fc.constant('operator' as const)},
  {weight: 3, arbitrary: fc.constant('viewer' as const)},
  {weight: 3, arbitrary: fc.constant('none' as const)},
  {
    weight: 1,
    arbitrary: fc.constantFrom('malformed' as const, 'forged' as const),
  },
);

/** Percent-encodes any string; a lone surrogate is sent as U+FFFD, as a browser would. */
function encodePathValue(value: string): string {
  return encodeURIComponent(Buffer.from(value).toString());
}

function pathFor(
  operation: FuzzOperation,
  knownKeys: string[],
): fc.Arbitrary<string> {
  const names = operation.parameters
    .filter(p => p.in === 'path')
    .map(p => ({name: p.name, value: pathValueFor(p, knownKeys)}));
  return fc
    .tuple(...names.map(p => p.value))
    .map(values =>
      names.reduce(
        (path, {name}, i) =>
          path.replace(`{${name}}`, encodePathValue(values[i])),
        operation.path,
      ),
    );
}

function requestFor(
  operation: FuzzOperation,
  knownKeys: string[],
): fc.Arbitrary<FuzzRequest> {
  const hasBody = operation.body !== undefined;
  return fc
    .record({
      path: pathFor(operation, knownKeys),
      query: queryFor(operation),
      body: hasBody ? bodyFor(operation) : fc.constant(undefined),
      auth: authKind,
    })
    .map(({body, ...rest}) => ({
      operation: operation.id,
      method: operation.method,
      ...rest,
      ...(body ? {body} : {}),
    }));
}

/**
 * One request to any operation of the document, all operations equally
 * likely. `knownKeys` are string ids that exist (config keys), so keyed
 * resources are reached beyond 404.
 */
export function fuzzRequest(
  operations: FuzzOperation[],
  knownKeys: string[],
): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(...operations.map(op => requestFor(op, knownKeys)));
}
