import {Entity, model, property} from '@loopback/repository';
import {timestampColumn} from './columns';

/** A named setting. Not a place for secrets: every role can read it. */
@model({
  name: 'Config',
  settings: {strict: true, postgresql: {schema: 'public', table: 'config'}},
})
export class Config extends Entity {
  @property({
    type: 'string',
    id: true,
    generated: false,
    required: true,
    jsonSchema: {pattern: '^[A-Za-z0-9._-]{1,100}$'},
    postgresql: {columnName: 'key', dataType: 'text'},
  })
  key: string;

  @property({
    type: 'any',
    required: true,
    description: 'Any JSON value',
    postgresql: {columnName: 'value', dataType: 'jsonb'},
  })
  value: unknown;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Config>) {
    super(data);
  }
}
