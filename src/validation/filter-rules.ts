import type {Filter} from '@loopback/repository';
import type {ErrorDetail} from '../middleware/error-mapping';
import {validationError} from './validation-error';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

/** Juggler operators that the PostgreSQL connector turns into parameters. */
export const FILTER_OPERATORS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'inq',
  'nin',
  'between',
  'like',
  'nlike',
  'ilike',
  'nilike',
  'regexp',
] as const;
const OPERATORS = new Set<string>(FILTER_OPERATORS);
const ORDER = /^([A-Za-z_][A-Za-z0-9_]*)(?:\s+(ASC|DESC))?$/i;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The connector silently ignores a `where` key it does not know, which would
 * turn a typo into "return everything". Reject it instead.
 */
/** Operands of a condition: the value itself, or each operator's (arrays spread). */
function operandsOf(condition: unknown): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = isPlainObject(condition)
    ? Object.entries(condition)
    : [['', condition]];
  return entries.flatMap(([operator, value]) =>
    (Array.isArray(value) ? value : [value]).map(
      item => [operator, item] as [string, unknown],
    ),
  );
}

/**
 * The connector turns a date field's operand into a Date and throws a plain
 * error (a 500) when it cannot, e.g. `{"created_at": "72476998"}`; the API
 * fuzzer found it. Refuse such operands as the caller's mistake instead.
 * `regexp` operands are matched as text and left alone, as the connector does.
 */
function dateErrors(condition: unknown, keyPath: string): ErrorDetail[] {
  return operandsOf(condition)
    .filter(
      ([operator, value]) =>
        operator !== 'regexp' &&
        value !== null &&
        Number.isNaN(new Date(value as string).getTime()),
    )
    .map(([operator]) => ({
      path: operator ? `${keyPath}/${operator}` : keyPath,
      code: 'date',
      message: 'must be an ISO 8601 date-time (or null)',
    }));
}

const isScalar = (value: unknown) =>
  value === null || ['string', 'number', 'boolean'].includes(typeof value);

/**
 * The connector writes operands into SQL as parameters but has no form for
 * an object or a nested list: `{"eq": {}}` became a syntax error (a 500 the
 * fuzzer found). Lists for inq/nin, a pair for between, one value otherwise.
 */
function operandProblem(
  operator: string,
  operand: unknown,
): string | undefined {
  if (operator === 'inq' || operator === 'nin') {
    return Array.isArray(operand) &&
      operand.length > 0 &&
      operand.every(isScalar)
      ? undefined
      : `${operator} needs a non-empty list of values`;
  }
  if (operator === 'between') {
    return Array.isArray(operand) &&
      operand.length === 2 &&
      operand.every(isScalar)
      ? undefined
      : 'between needs a list of two values';
  }
  return isScalar(operand) ? undefined : `${operator} needs a single value`;
}

/** What a filter may name, and which operands each kind of property takes. */
export interface FilterableProperties {
  /** Visible properties: the only ones `where`, `fields` and `order` may name. */
  all: ReadonlySet<string>;
  /** Timestamps: their operands must be dates. */
  dates?: ReadonlySet<string>;
  /** Text columns: the only ones PostgreSQL's `~` (regexp) accepts. */
  texts?: ReadonlySet<string>;
  /** JSON columns: `like` and its kin cannot match them. */
  jsons?: ReadonlySet<string>;
}

const LIKE_OPERATORS = new Set(['like', 'nlike', 'ilike', 'nilike']);

/** `/body/flags` as juggler reads it; anything else is PostgreSQL's own syntax. */
const SLASHED_REGEXP = /^\/(.*)\/([a-z]*)$/s;

/**
 * PostgreSQL has no `~` for integer, boolean, timestamp or jsonb columns
 * (42883, a 500), and juggler throws on a `/…/` literal JavaScript cannot
 * compile: both are the caller's mistake.
 */
function regexpProblem(
  field: string,
  operand: unknown,
  texts: ReadonlySet<string>,
): string | undefined {
  if (!texts.has(field)) {
    return `regexp works on text fields only; "${field}" is not one`;
  }
  const slashed =
    typeof operand === 'string' ? SLASHED_REGEXP.exec(operand) : null;
  if (!slashed) return undefined;
  // Juggler refuses the flags JavaScript added later (a 400 with its text).
  if (/[^gim]/.test(slashed[2])) {
    return `regexp on "${field}" takes the flags g, i and m only`;
  }
  try {
    new RegExp(slashed[1], slashed[2]);
    return undefined;
  } catch {
    return `regexp on "${field}" is not a valid regular expression`;
  }
}

function whereErrors(
  where: unknown,
  shape: FilterableProperties,
  path: string,
): ErrorDetail[] {
  const properties = shape.all;
  const dateProperties = shape.dates ?? new Set<string>();
  if (!isPlainObject(where)) {
    return [{path, code: 'type', message: 'where must be an object'}];
  }
  const errors: ErrorDetail[] = [];
  for (const [key, condition] of Object.entries(where)) {
    const keyPath = `${path}/${key}`;
    if (key === 'and' || key === 'or') {
      if (!Array.isArray(condition)) {
        errors.push({
          path: keyPath,
          code: 'type',
          message: `${key} must be an array`,
        });
        continue;
      }
      condition.forEach((clause, index) =>
        errors.push(...whereErrors(clause, shape, `${keyPath}/${index}`)),
      );
    } else if (!properties.has(key)) {
      errors.push({
        path: keyPath,
        code: 'unknownField',
        message: `unknown field "${key}"`,
      });
    } else {
      if (dateProperties.has(key)) {
        errors.push(...dateErrors(condition, keyPath));
      }
      if (Array.isArray(condition)) {
        // The connector has no meaning for a bare list (juggler's near-search
        // scan crashed on nested nulls in one: a 500 the fuzzer found).
        errors.push({
          path: keyPath,
          code: 'type',
          message: 'a list of values needs an operator: {"inq": [...]}',
        });
        continue;
      }
      if (!isPlainObject(condition)) continue;
      if (Object.keys(condition).length === 0) {
        errors.push({
          path: keyPath,
          code: 'type',
          message: 'a condition object needs an operator',
        });
      }
      for (const [operator, operand] of Object.entries(condition)) {
        if (!OPERATORS.has(operator)) {
          errors.push({
            path: `${keyPath}/${operator}`,
            code: 'unknownOperator',
            message: `unknown operator "${operator}"; use one of ${[...OPERATORS].join(', ')}`,
          });
          continue;
        }
        const problem =
          operandProblem(operator, operand) ??
          (operator === 'regexp'
            ? regexpProblem(key, operand, shape.texts ?? new Set())
            : undefined) ??
          (LIKE_OPERATORS.has(operator) && operand === null
            ? `${operator} on "${key}" needs a pattern, not null`
            : undefined) ??
          (LIKE_OPERATORS.has(operator) && shape.jsons?.has(key)
            ? `${operator} cannot match the JSON field "${key}" (it matched nothing); search it with q`
            : undefined);
        if (problem) {
          errors.push({
            path: `${keyPath}/${operator}`,
            code: 'type',
            message: problem,
          });
        }
      }
    }
  }
  return errors;
}

function fieldsErrors(
  fields: unknown,
  properties: ReadonlySet<string>,
): ErrorDetail[] {
  const names = Array.isArray(fields)
    ? fields.map(String)
    : isPlainObject(fields)
      ? Object.keys(fields)
      : [];
  return names
    .filter(name => !properties.has(name))
    .map(name => ({
      path: `/filter/fields/${name}`,
      code: 'unknownField',
      message: `unknown field "${name}"`,
    }));
}

function orderErrors(
  order: unknown,
  properties: ReadonlySet<string>,
): ErrorDetail[] {
  const clauses = Array.isArray(order) ? order : [order];
  const errors: ErrorDetail[] = [];
  if (clauses.length === 0) {
    // The connector wrote an empty ORDER BY (a 500 the fuzzer found).
    errors.push({
      path: '/filter/order',
      code: 'order',
      message: 'order needs at least one "<field> ASC|DESC" clause',
    });
  }
  clauses.forEach((clause, index) => {
    const match = typeof clause === 'string' ? ORDER.exec(clause.trim()) : null;
    if (!match || !properties.has(match[1])) {
      errors.push({
        path: `/filter/order/${index}`,
        code: 'order',
        message: `order must be "<field> ASC" or "<field> DESC" with a known field, got ${JSON.stringify(clause)}`,
      });
    }
  });
  return errors;
}

/**
 * Checks a list filter against the model's properties (and the operands of
 * its date and text properties) and bounds the page: `limit` defaults to 100 and is
 * capped at 1000.
 */
export function boundedFilter<T extends object>(
  filter: Filter<T> | undefined,
  shape: FilterableProperties,
): Filter<T> {
  const given = (filter ?? {}) as Filter<T> & Record<string, unknown>;
  const properties = shape.all;
  const errors: ErrorDetail[] = [];
  if (given.where !== undefined) {
    errors.push(...whereErrors(given.where, shape, '/filter/where'));
  }
  if (given.fields !== undefined)
    errors.push(...fieldsErrors(given.fields, properties));
  if (given.order !== undefined)
    errors.push(...orderErrors(given.order, properties));
  if (given.include !== undefined) {
    errors.push({
      path: '/filter/include',
      code: 'unsupported',
      message: 'include is not supported on this resource',
    });
  }
  if (errors.length > 0) throw validationError(errors, 'The filter');
  const limit = Math.min(given.limit ?? DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
  return given.order === undefined
    ? {...given, limit}
    : {...given, order: checkedOrder(given.order), limit};
}

/**
 * `order` ending with `<idName> ASC` unless it names the id already: rows
 * with equal values in every ordered column come back in no fixed order, so
 * without a unique last key, pages (limit and skip) could repeat one row and
 * never show another.
 */
export function tieBrokenOrder(
  order: string | string[],
  idName: string,
): string[] {
  const clauses = Array.isArray(order) ? order : [order];
  const namesId = clauses.some(
    clause => ORDER.exec(clause.trim())?.[1] === idName,
  );
  return namesId ? clauses : [...clauses, `${idName} ASC`];
}

/**
 * The order clauses as orderErrors read them (trimmed, one space before the
 * direction): juggler splits a clause on every space, so " id DESC" would
 * pass the check and then fail there with a 400. One clause sent as a
 * string (a query string's form, whatever the type says) stays a string.
 */
function checkedOrder(order: unknown): string[] {
  const tidy = (clause: string) => clause.trim().split(/\s+/).join(' ');
  return (
    Array.isArray(order) ? order.map(tidy) : tidy(order as string)
  ) as string[];
}
