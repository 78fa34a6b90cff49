import {Entity, model, property} from '@loopback/repository';
import {idColumn, idListColumn, textColumn, timestampColumn} from './columns';

@model({
  name: 'Reminder',
  settings: {strict: true, postgresql: {schema: 'public', table: 'reminder'}},
})
export class Reminder extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('message', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 10000},
    }),
  )
  message: string;

  @property(idListColumn('user_ids', {description: 'Recipient users'}))
  user_ids?: number[];

  @property(
    idListColumn('group_ids', {description: 'Recipient groups (every member)'}),
  )
  group_ids?: number[];

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Reminder>) {
    super(data);
  }
}
