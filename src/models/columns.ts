import type {PropertyDefinition} from '@loopback/repository';

/**
 * Property definitions that name their PostgreSQL column explicitly, so a
 * model never depends on the connector's own name mapping.
 */
const INT32_MAX = 2147483647;

type Extra = Partial<PropertyDefinition> & {jsonSchema?: object};

function merge(base: Extra, extra: Extra = {}): PropertyDefinition {
  return {
    ...base,
    ...extra,
    jsonSchema: {...(base.jsonSchema ?? {}), ...(extra.jsonSchema ?? {})},
    postgresql: {...base.postgresql, ...(extra.postgresql ?? {})},
  } as PropertyDefinition;
}

export function idColumn(dataType: 'integer' | 'bigint' = 'integer') {
  return merge({
    type: 'number',
    id: true,
    generated: true,
    jsonSchema: {type: 'integer'},
    postgresql: {columnName: 'id', dataType},
  });
}

/** A positive 32-bit integer reference to another row; null when absent. */
export function referenceColumn(column: string, extra?: Extra) {
  return merge(
    {
      type: 'number',
      jsonSchema: {
        type: 'integer',
        minimum: 1,
        maximum: INT32_MAX,
        nullable: !extra?.required,
      },
      postgresql: {
        columnName: column,
        dataType: 'integer',
        nullable: extra?.required ? 'NO' : 'YES',
      },
    },
    extra,
  );
}

export function textColumn(column: string, extra?: Extra) {
  return merge(
    {
      type: 'string',
      jsonSchema: extra?.required ? {} : {nullable: true},
      postgresql: {columnName: column, dataType: 'text'},
    },
    extra,
  );
}

export function integerColumn(column: string, extra?: Extra) {
  return merge(
    {
      type: 'number',
      jsonSchema: {type: 'integer', nullable: !extra?.required},
      postgresql: {columnName: column, dataType: 'integer'},
    },
    extra,
  );
}

export function booleanColumn(column: string, extra?: Extra) {
  return merge(
    {type: 'boolean', postgresql: {columnName: column, dataType: 'boolean'}},
    extra,
  );
}

export function jsonObjectColumn(column: string, extra?: Extra) {
  return merge(
    {
      type: 'object',
      jsonSchema: {type: 'object'},
      postgresql: {columnName: column, dataType: 'jsonb'},
    },
    extra,
  );
}

/**
 * A jsonb array of positive integer ids. Typed `object` for the connector
 * (stored as JSON): with `type: 'array'` LoopBack applies `jsonSchema` to the
 * items and would describe a list of lists.
 */
export function idListColumn(column: string, extra?: Extra) {
  return merge(
    {
      type: 'object',
      jsonSchema: {
        type: 'array',
        items: {type: 'integer', minimum: 1, maximum: INT32_MAX},
        uniqueItems: true,
        maxItems: 10000,
      },
      postgresql: {columnName: column, dataType: 'jsonb'},
    },
    extra,
  );
}

/**
 * A jsonb array of strings, each shaped by `items` (typed `object` for the
 * connector, as idListColumn explains).
 */
export function textListColumn(
  column: string,
  items: object,
  maxItems: number,
  extra?: Extra,
) {
  return merge(
    {
      type: 'object',
      jsonSchema: {
        type: 'array',
        items: {type: 'string', ...items},
        maxItems,
      },
      postgresql: {columnName: column, dataType: 'jsonb'},
    },
    extra,
  );
}

export function timestampColumn(column: string, extra?: Extra) {
  return merge(
    {
      type: 'date',
      postgresql: {columnName: column, dataType: 'timestamp with time zone'},
    },
    extra,
  );
}

/** created_at and updated_at are set by the database and never written. */
export const SERVER_TIMESTAMPS = ['created_at', 'updated_at'] as const;
