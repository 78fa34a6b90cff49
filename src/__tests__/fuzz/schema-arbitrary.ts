import fc from 'fast-check';

/** The part of OpenAPI 3.0's schema dialect the service's document uses. */
export interface JsonSchema {
  type?: string;
  title?: string;
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  nullable?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

const INT32_MAX = 2147483647;
/** Random strings stay short; the edges (min and max length) are added apart. */
const TYPICAL_LENGTH = 40;

/** Any JSON value, shallow: for fields the schema leaves open (`params`, `value`). */
export const anyJson = (): fc.Arbitrary<unknown> => fc.jsonValue({maxDepth: 3});

function stringValue(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = schema.maxLength ?? TYPICAL_LENGTH * 4;
  if (schema.pattern) {
    const matching = new RegExp(schema.pattern);
    return fc.stringMatching(matching).filter(s => s.length <= maxLength);
  }
  if (schema.format === 'date-time') {
    return fc
      .date({
        min: new Date('1970-01-01T00:00:00Z'),
        max: new Date('2100-12-31T23:59:59Z'),
        noInvalidDate: true,
      })
      .map(date => date.toISOString());
  }
  if (schema.format === 'email') {
    return fc.emailAddress().filter(email => email.length <= maxLength);
  }
  // Lengths count code points in the validator, UTF-16 units in JavaScript:
  // the edges use ASCII, so "exactly maxLength" means the same to both.
  const edges = [minLength, Math.max(minLength, 1), maxLength].map(length =>
    fc.constant('a'.repeat(length)),
  );
  return fc
    .oneof(
      {
        weight: 4,
        arbitrary: fc.string({
          unit: 'grapheme',
          minLength,
          maxLength: Math.min(maxLength, Math.max(minLength, TYPICAL_LENGTH)),
        }),
      },
      {weight: 1, arbitrary: fc.oneof(...edges)},
    )
    .filter(s => [...s].length >= minLength && [...s].length <= maxLength);
}

function integerValue(schema: JsonSchema): fc.Arbitrary<number> {
  const min = schema.minimum ?? -INT32_MAX;
  const max = schema.maximum ?? INT32_MAX;
  return fc.oneof(
    {weight: 4, arbitrary: fc.integer({min, max: Math.min(max, min + 100)})},
    {weight: 1, arbitrary: fc.integer({min, max})},
    {weight: 1, arbitrary: fc.constantFrom(min, max)},
  );
}

function objectValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  if (Object.keys(properties).length === 0) {
    // A map whose values have a schema of their own (headers: name → string).
    const values =
      typeof schema.additionalProperties === 'object'
        ? validValue(schema.additionalProperties)
        : anyJson();
    return fc.dictionary(fc.string({maxLength: 12}), values, {maxKeys: 5});
  }
  const model = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [
      name,
      validValue(property),
    ]),
  );
  return fc.record(model, {requiredKeys: schema.required ?? []});
}

/** Values the schema accepts, leaning towards its edges. */
export function validValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const value = nonNullValue(schema);
  return schema.nullable
    ? fc.option(value, {nil: null, freq: 6})
    : (value as fc.Arbitrary<unknown>);
}

function nonNullValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const choices = schema.oneOf ?? schema.anyOf;
  if (choices) return fc.oneof(...choices.map(validValue));
  if (schema.allOf) {
    return validValue(Object.assign({}, ...schema.allOf) as JsonSchema);
  }
  switch (schema.type) {
    case 'string':
      return stringValue(schema);
    case 'integer':
      return integerValue(schema);
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1e9,
        max: schema.maximum ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const items = validValue(schema.items ?? {});
      const length = {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 5, 5),
      };
      return schema.uniqueItems
        ? fc.uniqueArray(items, length)
        : fc.array(items, length);
    }
    case 'object':
      return objectValue(schema);
    default:
      return anyJson();
  }
}
