import {Entity, model, property} from '@loopback/repository';
import {
  idColumn,
  jsonObjectColumn,
  textColumn,
  timestampColumn,
} from './columns';
import {reportNames} from '../reports/registry';

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
      // Only classes the service can run: a typo fails here, not at 3 a.m.
      jsonSchema: {enum: reportNames()},
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
