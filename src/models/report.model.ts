import {Entity, model, property} from '@loopback/repository';
import {
  idColumn,
  jsonObjectColumn,
  textColumn,
  timestampColumn,
} from './columns';

@model({
  name: 'Report',
  settings: {strict: true, postgresql: {schema: 'public', table: 'report'}},
})
export class Report extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('name', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 200},
    }),
  )
  name: string;

  @property(
    textColumn('controller', {
      required: true,
      description: 'Report class name from the report registry',
      jsonSchema: {pattern: '^[A-Za-z][A-Za-z0-9]*$', maxLength: 100},
    }),
  )
  controller: string;

  @property(textColumn('description', {jsonSchema: {maxLength: 2000}}))
  description?: string | null;

  @property(jsonObjectColumn('default_params'))
  default_params?: Record<string, unknown>;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Report>) {
    super(data);
  }
}
