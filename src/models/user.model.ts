import {Entity, model, property} from '@loopback/repository';
import {ROLES, Role} from './user-role';
import {
  booleanColumn,
  idColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

@model({
  name: 'User',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'app_user'},
    // Never serialised: not in responses, not in logs.
    hiddenProperties: ['password_hash'],
  },
})
export class User extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('email', {
      required: true,
      jsonSchema: {format: 'email', maxLength: 320},
    }),
  )
  email: string;

  @property(
    textColumn('name', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 200},
    }),
  )
  name: string;

  @property(textColumn('password_hash', {required: true}))
  password_hash: string;

  @property(
    textColumn('role', {
      required: true,
      jsonSchema: {enum: [...ROLES]},
      description: 'admin, operator or viewer',
    }),
  )
  role: Role;

  @property(referenceColumn('group_id'))
  group_id?: number | null;

  @property(referenceColumn('language_id'))
  language_id?: number | null;

  @property(
    booleanColumn('active', {description: 'Inactive users cannot log in'}),
  )
  active?: boolean;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<User>) {
    super(data);
  }
}
