import fc from 'fast-check';
import type {FuzzOperation} from './api-operations';
import {hostileValue, hugeString, prototypeKeys} from './hostile-values';
import {invalidValue, withKey, withoutKey} from './invalid-values';
import {JsonSchema, validValue} from './schema-arbitrary';

/**
 * Builds a body from a record the service itself returned (see record-pool):
 * `base` fills what the record lacks, one field may then be overridden.
 */
export interface RecordRecipe {
  pick: number;
  base: Record<string, unknown>;
  overrides: Record<string, unknown>;
}

/** Exactly what goes on the wire, so a reproducer can resend it byte for byte. */
export interface BodyText {
  kind: string;
  text: string;
  contentType: string;
  /** Set until the runner turns the recipe into `text`, just before sending. */
  fromRecord?: RecordRecipe;
}

const JSON_TYPE = 'application/json';

/** Keys a body must never smuggle in: server-owned, hidden or prototype keys. */
const SMUGGLED_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'id',
  'user_id',
  'created_at',
  'updated_at',
  'password_hash',
  'isAdmin',
];

const MALFORMED_JSON = [
  '{',
  '{"description":',
  '[1,2',
  'undefined',
  "{'a':1}",
  '{"a":1}}',
  '\ufeff{}',
  '{"a":NaN}',
  '{"a":1,"a":2}',
  '{"__proto__":{"x":1},"__proto__":{"y":2}}',
  'null',
  '"text"',
  '12',
  ' ',
];

const OTHER_CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/merge-patch+json',
];

type Body = Record<string, unknown>;

const asJson =
  (kind: string, contentType = JSON_TYPE) =>
  (value: unknown): BodyText => ({
    kind,
    text: JSON.stringify(value) ?? 'null',
    contentType,
  });

/**
 * Bodies built from the service's own records reach what random values
 * rarely do: rules across fields (a scheduler's cron and task), unique keys,
 * and the success path of every write.
 */
function recordBased(schema: JsonSchema): fc.Arbitrary<BodyText> {
  const properties = Object.entries(schema.properties ?? {});
  const override = fc
    .constantFrom(...properties)
    .chain(([name, property]) =>
      fc
        .oneof(
          {weight: 2, arbitrary: validValue(property)},
          {weight: 1, arbitrary: invalidValue(property)},
        )
        .map(value => withKey({}, name, value)),
    );
  return fc
    .record({
      pick: fc.nat(),
      base: validValue(schema) as fc.Arbitrary<Body>,
      overrides: fc.option(override, {nil: {}, freq: 2}),
    })
    .map(recipe => ({
      kind: 'from-record',
      text: '',
      contentType: JSON_TYPE,
      fromRecord: recipe,
    }));
}

function objectMutations(schema: JsonSchema): fc.Arbitrary<BodyText>[] {
  const valid = validValue(schema) as fc.Arbitrary<Body>;
  const properties = Object.entries(schema.properties ?? {});
  const mutations: fc.Arbitrary<BodyText>[] = [
    fc
      .tuple(
        valid,
        fc.oneof(fc.constantFrom(...SMUGGLED_KEYS), fc.string()),
        hostileValue(),
      )
      .map(([body, key, value]) => withKey(body, key, value))
      .map(asJson('extra-field')),
    fc
      .tuple(valid, prototypeKeys())
      .map(([body, keys]) => ({...body, ...keys}))
      .map(asJson('prototype-keys')),
  ];
  if (properties.length > 0) {
    mutations.push(
      fc
        .tuple(valid, fc.constantFrom(...properties))
        .chain(([body, [name, property]]) =>
          invalidValue(property).map(value => withKey(body, name, value)),
        )
        .map(asJson('wrong-field')),
    );
  }
  if (schema.required?.length) {
    mutations.push(
      fc
        .tuple(valid, fc.constantFrom(...schema.required))
        .map(([body, name]) => withoutKey(body, name))
        .map(asJson('missing-field')),
    );
  }
  return mutations;
}

/**
 * Request bodies for one operation: valid ones (to reach the code behind
 * validation), ones with one field wrong, smuggled or missing keys, wholly
 * hostile JSON, malformed text, oversized bodies, none, or a wrong media type.
 */
export function bodyFor(
  operation: FuzzOperation,
): fc.Arbitrary<BodyText | undefined> {
  const schema = operation.body?.schema ?? {type: 'object'};
  const valid = validValue(schema);
  const fromRecords = Object.keys(schema.properties ?? {}).length
    ? [{weight: 10, arbitrary: recordBased(schema)}]
    : [];
  return fc.oneof(
    {weight: 12, arbitrary: valid.map(asJson('valid'))},
    ...fromRecords,
    ...objectMutations(schema).map(arbitrary => ({weight: 4, arbitrary})),
    {weight: 4, arbitrary: hostileValue().map(asJson('hostile'))},
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(...MALFORMED_JSON)
        .map(text => ({kind: 'malformed', text, contentType: JSON_TYPE})),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, hugeString(1_050_000, 1_300_000))
        .map(([body, huge]) =>
          asJson('oversized')(
            typeof body === 'object' && body !== null
              ? withKey(body as Body, 'description', huge)
              : huge,
          ),
        ),
    },
    {weight: 2, arbitrary: fc.constant(undefined)},
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...OTHER_CONTENT_TYPES))
        .map(([body, type]) => asJson('content-type', type)(body)),
    },
  );
}
