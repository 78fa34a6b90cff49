import {Entity, model, property} from '@loopback/repository';
import {
  idColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

/** A plain example resource of the generic controller convention. */
@model({
  name: 'Ticket',
  settings: {strict: true, postgresql: {schema: 'public', table: 'ticket'}},
})
export class Ticket extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('title', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 500},
    }),
  )
  title: string;

  @property(textColumn('description', {jsonSchema: {maxLength: 20000}}))
  description?: string | null;

  @property(
    textColumn('status', {
      jsonSchema: {minLength: 1, maxLength: 50, nullable: false},
      description: 'Free-form state, "open" by default',
    }),
  )
  status?: string;

  @property(referenceColumn('user_id', {description: 'User who opened it'}))
  user_id?: number | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Ticket>) {
    super(data);
  }
}
