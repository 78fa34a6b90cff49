import {Entity, model, property} from '@loopback/repository';
import {idColumn, textColumn, timestampColumn} from './columns';

/** A module group: users and schedulers belong to one. */
@model({
  name: 'Group',
  settings: {strict: true, postgresql: {schema: 'public', table: 'user_group'}},
})
export class Group extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('name', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 200},
    }),
  )
  name: string;

  @property(textColumn('description', {jsonSchema: {maxLength: 2000}}))
  description?: string | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Group>) {
    super(data);
  }
}
