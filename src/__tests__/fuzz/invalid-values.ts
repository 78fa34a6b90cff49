import fc from 'fast-check';
import {hostileString, hostileValue, hugeString} from './hostile-values';
import type {JsonSchema} from './schema-arbitrary';

/** Values just past the schema's own edges: one too long, one too small… */
function pastTheEdges(schema: JsonSchema): fc.Arbitrary<unknown>[] {
  const edges: fc.Arbitrary<unknown>[] = [];
  if (schema.maxLength !== undefined) {
    edges.push(hugeString(schema.maxLength + 1, schema.maxLength + 3));
  }
  if (schema.minLength !== undefined && schema.minLength > 0) {
    edges.push(fc.constant('a'.repeat(schema.minLength - 1)));
  }
  if (schema.minimum !== undefined) {
    edges.push(fc.constantFrom(schema.minimum - 1, schema.minimum - 0.5));
  }
  if (schema.maximum !== undefined) {
    edges.push(fc.constant(schema.maximum + 1));
  }
  if (schema.type === 'integer') edges.push(fc.constantFrom(1.5, '1', '1e3'));
  if (schema.enum) {
    edges.push(fc.constantFrom('superuser', 'ADMIN', ' admin', ''));
  }
  if (schema.pattern ?? schema.format) edges.push(hostileString());
  if (!schema.nullable && schema.type) edges.push(fc.constant(null));
  return edges;
}

/** A value the schema should refuse (or, at worst, a hostile one it accepts). */
export function invalidValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const edges = pastTheEdges(schema);
  return edges.length
    ? fc.oneof({weight: 1, arbitrary: hostileValue()}, ...edges)
    : hostileValue();
}

/** Adds a key as an own property, even `__proto__`. */
export function withKey(
  object: Record<string, unknown>,
  key: string,
  value: unknown,
): Record<string, unknown> {
  return Object.fromEntries([
    ...Object.entries(object).filter(([name]) => name !== key),
    [key, value],
  ]);
}

export function withoutKey(
  object: Record<string, unknown>,
  key: string,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(object).filter(([name]) => name !== key),
  );
}
