import {Entity, model, property} from '@loopback/repository';
import {
  idColumn,
  jsonObjectColumn,
  textColumn,
  timestampColumn,
} from './columns';

/** One entry of the audit log: who changed what, when and why (read-only). */
@model({
  name: 'AuditEvent',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'audit_event'},
  },
})
export class AuditEvent extends Entity {
  @property(idColumn('bigint'))
  id?: number;

  @property(timestampColumn('at', {description: 'When it happened'}))
  at?: Date | string;

  @property({
    type: 'number',
    description:
      'The user who did it; null for an anonymous attempt (a failed sign-in)',
    jsonSchema: {type: 'integer', nullable: true},
    postgresql: {
      columnName: 'actor_user_id',
      dataType: 'integer',
      nullable: 'YES',
    },
  })
  actor_user_id?: number | null;

  @property(
    textColumn('action', {
      required: true,
      description:
        'What happened: create, update, delete, login.succeeded, login.failed, login.locked, logout, tokens.revoked, password.changed, …',
    }),
  )
  action: string;

  @property(
    textColumn('entity', {
      required: true,
      description:
        'The kind of thing it happened to: session, user, scheduler, …',
    }),
  )
  entity: string;

  @property(
    textColumn('entity_id', {
      description: 'Its id, as text',
      jsonSchema: {nullable: true},
    }),
  )
  entity_id?: string | null;

  @property(
    textColumn('reason', {
      description:
        'Why, as the caller said (X-Change-Reason or a reason field)',
      jsonSchema: {nullable: true},
    }),
  )
  reason?: string | null;

  @property(
    jsonObjectColumn('changes', {
      description:
        'Each changed field as [before, after]; secrets and password hashes are masked',
    }),
  )
  changes?: object;

  @property(
    textColumn('request_id', {
      description: 'The request that caused it, when known',
      jsonSchema: {nullable: true},
    }),
  )
  request_id?: string | null;

  constructor(data?: Partial<AuditEvent>) {
    super(data);
  }
}
