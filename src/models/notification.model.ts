import {Entity, model, property} from '@loopback/repository';
import {
  idColumn,
  jsonObjectColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

/** A web notification for one user (reminders, report deliveries). */
@model({
  name: 'Notification',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'notification'},
  },
})
export class Notification extends Entity {
  @property(idColumn('bigint'))
  id?: number;

  @property(referenceColumn('user_id', {required: true}))
  user_id: number;

  @property(
    textColumn('title', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 500},
    }),
  )
  title: string;

  @property(textColumn('body', {jsonSchema: {maxLength: 20000}}))
  body?: string | null;

  @property(jsonObjectColumn('payload'))
  payload?: Record<string, unknown>;

  @property(
    timestampColumn('read_at', {
      description: 'When the user read it; null while unread',
      jsonSchema: {nullable: true},
    }),
  )
  read_at?: Date | string | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  constructor(data?: Partial<Notification>) {
    super(data);
  }
}
