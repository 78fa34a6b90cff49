import fc from 'fast-check';

/** Text that would do harm if it ever reached SQL unparameterised. */
export const SQL_LOOKING = [
  "' OR '1'='1",
  '1; DROP TABLE scheduler; --',
  "'); DELETE FROM app_user; --",
  '1 UNION SELECT password_hash FROM app_user',
  "' || (SELECT pg_sleep(5)) || '",
  '$1',
  '%',
  '_%\\',
  '\\',
  '"id"; --',
  'id DESC; DROP TABLE config',
  '(SELECT 1)',
];

/** Strings that trip encoders, databases and loggers. */
const AWKWARD_TEXT = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\uffff',
  '😀'.repeat(20),
  'Ω≈ç√∫',
  '\u202egnp.exe',
  'Z̷̢͓̠a̶̛̟l̴̨g̵o̴',
  '\r\n\r\nX-Injected: 1',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '${7*7}{{7*7}}',
  '2027-13-45T25:61:00Z',
  '+275760-09-13T00:00:00Z',
  '2027-03-01T09:30:00',
  'NaN',
  'true',
  '1e309',
  '-0',
  '0x1F',
];

/** Numbers at and past every boundary a 32- or 64-bit column has. */
const EDGE_NUMBERS = [
  0,
  -1,
  1.5,
  -2147483648,
  2147483647,
  2147483648,
  -2147483649,
  4294967296,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  // 2^63, one past the largest bigint.
  2 ** 63,
  1e21,
  1e308,
  -1e308,
  5e-324,
];

/** Objects whose keys aim at the prototype chain, parsed so the keys are own properties. */
const PROTOTYPE_KEYS = [
  '{"__proto__":{"isAdmin":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"prototype":{"polluted":true}}',
  '{"__proto__":null}',
  '{"hasOwnProperty":1,"toString":"x","valueOf":[]}',
].map(text => JSON.parse(text) as object);

/** `[[[…]]]` or `{"a":{"a":…}}` `depth` levels deep. */
export function nested(depth: number, asObject: boolean): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = asObject ? {a: value} : [value];
  return value;
}

/** A long run of one character: huge but cheap to generate and to shrink. */
export const hugeString = (min: number, max: number) =>
  fc
    .tuple(fc.integer({min, max}), fc.constantFrom('x', 'é', '😀', "'", '\\'))
    .map(([length, unit]) => unit.repeat(length));

export const deepValue = () =>
  fc
    .tuple(fc.integer({min: 20, max: 3000}), fc.boolean())
    .map(([depth, asObject]) => nested(depth, asObject));

export const prototypeKeys = () => fc.constantFrom(...PROTOTYPE_KEYS);

/** Any JSON value a careless server would choke on. */
export function hostileValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    {weight: 3, arbitrary: fc.constant(null)},
    {weight: 1, arbitrary: fc.boolean()},
    {weight: 4, arbitrary: fc.constantFrom(...EDGE_NUMBERS)},
    {
      weight: 2,
      arbitrary: fc.double({noNaN: true, noDefaultInfinity: true}),
    },
    {weight: 4, arbitrary: fc.constantFrom(...SQL_LOOKING)},
    {weight: 4, arbitrary: fc.constantFrom(...AWKWARD_TEXT)},
    {weight: 3, arbitrary: fc.string({unit: 'binary', maxLength: 30})},
    {weight: 2, arbitrary: hugeString(1000, 100_000)},
    {weight: 2, arbitrary: deepValue()},
    {weight: 2, arbitrary: prototypeKeys()},
    {
      weight: 2,
      arbitrary: fc.array(fc.jsonValue({maxDepth: 2}), {maxLength: 4}),
    },
    {weight: 1, arbitrary: fc.constantFrom({}, [])},
  );
}

/** A string for a slot that must hold a string: SQL, unicode, huge or binary. */
export function hostileString(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...SQL_LOOKING),
    fc.constantFrom(...AWKWARD_TEXT),
    fc.string({unit: 'binary', maxLength: 30}),
    hugeString(300, 1500),
    fc.constantFrom(...EDGE_NUMBERS).map(String),
  );
}
