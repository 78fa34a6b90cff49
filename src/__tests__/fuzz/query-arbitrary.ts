import fc from 'fast-check';
import type {FuzzOperation, FuzzParameter} from './api-operations';
import {
  hostileString,
  hostileValue,
  hugeString,
  SQL_LOOKING,
} from './hostile-values';
import {FILTER_OPERATORS} from '../../validation/filter-rules';
import {JsonSchema, validValue} from './schema-arbitrary';

export type QueryPairs = Array<[string, string]>;

/** The operators the service documents, and some it must refuse. */
const KNOWN_OPERATORS = FILTER_OPERATORS;
const UNKNOWN_OPERATORS = ['near', 'exists', '$where', 'options', 'and', ''];
/** Operands that break naive LIKE / regexp / IN handling. */
const AWKWARD_OPERANDS = [
  [],
  [1],
  [null, null],
  '\\',
  '%\\',
  '[',
  '(a+)+$',
  '*',
  '(?<',
  '/x/i',
];
const UNKNOWN_FIELDS = ['password_hash', 'descripton', '__proto__', 'id.id'];

function conditionFor(property: JsonSchema): fc.Arbitrary<unknown> {
  const operand = fc.oneof(
    validValue(property),
    hostileValue(),
    fc.array(validValue(property), {maxLength: 3}),
    fc.constantFrom(...AWKWARD_OPERANDS),
  );
  return fc.oneof(
    validValue(property),
    hostileValue(),
    fc
      .array(
        fc.tuple(
          fc.constantFrom(...KNOWN_OPERATORS, ...UNKNOWN_OPERATORS),
          operand,
        ),
        {minLength: 1, maxLength: 2},
      )
      .map(entries => Object.fromEntries(entries)),
  );
}

function whereFor(model: JsonSchema): fc.Arbitrary<unknown> {
  const properties = Object.entries(model.properties ?? {});
  const clause = fc
    .array(
      fc.oneof(
        {
          weight: 5,
          arbitrary: fc
            .constantFrom(...properties)
            .chain(([name, property]) =>
              conditionFor(property).map(c => [name, c] as const),
            ),
        },
        {
          weight: 1,
          arbitrary: fc.tuple(
            fc.constantFrom(...UNKNOWN_FIELDS),
            hostileValue(),
          ),
        },
      ),
      {maxLength: 3},
    )
    .map(entries => Object.fromEntries(entries));
  return fc.oneof(
    {weight: 6, arbitrary: clause},
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom('and', 'or'), fc.array(clause, {maxLength: 3}))
        .map(([key, clauses]) => ({[key]: clauses})),
    },
    {weight: 1, arbitrary: hostileValue()},
  );
}

function filterFor(model: JsonSchema): fc.Arbitrary<unknown> {
  const names = Object.keys(model.properties ?? {});
  const page = fc.oneof(fc.integer({min: 0, max: 2000}), hostileValue());
  return fc.record(
    {
      where: whereFor(model),
      fields: fc.oneof(
        fc.subarray(names),
        fc
          .subarray(names)
          .map(list => Object.fromEntries(list.map(n => [n, true]))),
        hostileValue(),
      ),
      order: fc.oneof(
        fc
          .tuple(
            fc.constantFrom(...names),
            fc.constantFrom('', ' ASC', ' desc'),
          )
          .map(([name, direction]) => name + direction),
        fc.constantFrom(...SQL_LOOKING),
        hostileValue(),
      ),
      limit: page,
      skip: page,
      offset: page,
      include: fc.constantFrom('user', ['scheduler'], {relation: 'x'}),
    },
    {requiredKeys: []},
  );
}

/** `filter` as JSON text, as broken text, or in `filter[where][id]=1` style. */
function filterPairs(model: JsonSchema): fc.Arbitrary<QueryPairs> {
  const names = Object.keys(model.properties ?? {});
  return fc.oneof(
    {
      weight: 8,
      arbitrary: filterFor(model).map(
        filter => [['filter', JSON.stringify(filter)]] as QueryPairs,
      ),
    },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom('{', 'null', '[]', '"x"', '{"where":', '1', ''),
          hostileString(),
        )
        .map(text => [['filter', text]] as QueryPairs),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            ...names.map(n => `filter[where][${n}]`),
            ...names.map(n => `filter[where][${n}][gt]`),
            'filter[limit]',
            'filter[order]',
            'filter[where][__proto__][x]',
            'filter[fields][0]',
          ),
          fc.oneof(fc.integer().map(String), hostileString()),
        )
        .map(pair => [pair] as QueryPairs),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(filterFor(model), filterFor(model)).map(
        ([a, b]) =>
          [
            ['filter', JSON.stringify(a)],
            ['filter', JSON.stringify(b)],
          ] as QueryPairs,
      ),
    },
  );
}

function plainPairs(parameter: FuzzParameter): fc.Arbitrary<QueryPairs> {
  return fc
    .option(
      fc.oneof(validValue(parameter.schema).map(String), hostileString()),
      {freq: 4},
    )
    .map(value =>
      value === null ? [] : ([[parameter.name, value]] as QueryPairs),
    );
}

/** Query strings for one operation, with an unknown parameter now and then. */
export function queryFor(operation: FuzzOperation): fc.Arbitrary<QueryPairs> {
  const parts = operation.parameters
    .filter(p => p.in === 'query')
    .map(p =>
      p.json && operation.modelSchema
        ? fc.option(filterPairs(operation.modelSchema), {freq: 6, nil: []})
        : plainPairs(p),
    );
  const unknown = fc.option(
    fc
      .tuple(
        fc.constantFrom('foo', '__proto__', 'where', 'access_token'),
        hostileString(),
      )
      .map(pair => [pair] as QueryPairs),
    {freq: 10, nil: []},
  );
  return fc.tuple(...parts, unknown).map(all => all.flat());
}

/** Path ids: mostly ones that may exist, then every kind that must not. */
export function pathValueFor(
  parameter: FuzzParameter,
  knownKeys: string[],
): fc.Arbitrary<string> {
  const isInteger = parameter.schema.type === 'integer';
  const likely = isInteger
    ? fc
        .oneof(
          {weight: 3, arbitrary: fc.integer({min: 1, max: 8})},
          {weight: 2, arbitrary: fc.integer({min: 1, max: 60})},
        )
        .map(String)
    : fc.oneof(
        fc.constantFrom(...knownKeys),
        validValue(parameter.schema).map(String),
      );
  return fc.oneof(
    {weight: 14, arbitrary: likely},
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '0',
        '-1',
        '2147483647',
        '2147483648',
        '99999999999999999999',
        '1e3',
        '1.5',
        '0x10',
        ' 1',
        'abc',
        'null',
        '..',
        '%',
        // Names of Object.prototype members: plain-object lookups find them.
        'toString',
        'constructor',
        '__proto__',
        'hasOwnProperty',
      ),
    },
    {weight: 2, arbitrary: hostileString()},
    {weight: 1, arbitrary: hugeString(1000, 4000)},
  );
}
