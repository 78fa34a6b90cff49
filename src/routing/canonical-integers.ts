import {
  isReferenceObject,
  ParameterObject,
  Request,
  ResolvedRoute,
  RestHttpErrors,
} from '@loopback/rest';

/**
 * An integer as a person or a client writes one: digits, an optional minus,
 * no leading zero (and no `-0`). LoopBack's coercion is `Number(text)`, which
 * also reads `0x10`, `1e3`, `+5`, `01` and `1.0` as numbers, and rounds a
 * fraction away near 2^53 (`…990.9` became `…991`): another row than the one
 * written.
 */
const CANONICAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;

interface IntegerParameter {
  name: string;
  in: 'path' | 'query';
}

/** Each route's integer path and query parameters, worked out once. */
const integerParametersOf = new WeakMap<object, IntegerParameter[]>();

function integerParameters(route: ResolvedRoute): IntegerParameter[] {
  let found = integerParametersOf.get(route.spec);
  if (!found) {
    found = (route.spec.parameters ?? [])
      .filter((p): p is ParameterObject => !isReferenceObject(p))
      .filter(p => p.in === 'path' || p.in === 'query')
      .filter(
        p =>
          p.schema !== undefined &&
          !isReferenceObject(p.schema) &&
          p.schema.type === 'integer',
      )
      .map(p => ({name: p.name, in: p.in as 'path' | 'query'}));
    integerParametersOf.set(route.spec, found);
  }
  return found;
}

/**
 * Refuses, with LoopBack's own 400 for invalid data, an integer path or query
 * parameter not written as a plain decimal integer. Runs before LoopBack's
 * coercion; everything else (range, required) stays with it.
 */
export function refuseNonCanonicalIntegers(
  request: Request,
  route: ResolvedRoute,
): void {
  // Routes without parameters (and LoopBack's per-request routes for static
  // files and 404s, whose spec is new each time) skip the cache.
  if (!route.spec.parameters?.length) return;
  for (const parameter of integerParameters(route)) {
    const raw =
      parameter.in === 'path'
        ? route.pathParams[parameter.name]
        : request.query[parameter.name];
    if (typeof raw === 'string' && !CANONICAL_INTEGER.test(raw)) {
      throw RestHttpErrors.invalidData(raw, parameter.name);
    }
  }
}
