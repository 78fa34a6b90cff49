import {Entity, model, property} from '@loopback/repository';
import {WEBHOOK_EVENTS} from '../webhooks/webhook-events';
import {
  booleanColumn,
  idColumn,
  idListColumn,
  integerColumn,
  referenceColumn,
  textColumn,
  textListColumn,
  timestampColumn,
} from './columns';

/** An endpoint told of runs, scheduler writes and notices, signed the Standard Webhooks way. */
@model({
  name: 'Webhook',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'webhook'},
    // Write-only: never in responses, audit events or logs.
    hiddenProperties: ['signing_secret', 'previous_signing_secret'],
  },
})
export class Webhook extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    referenceColumn('user_id', {
      description:
        'Owner: the caller who created it. An operator’s webhook hears only of schedulers that operator owns',
    }),
  )
  user_id?: number;

  @property(
    textColumn('url', {
      required: true,
      description:
        'http or https URL events are POSTed to. Every address it resolves to must pass the SSRF guard (OUTBOUND_ALLOW opens private ones)',
      jsonSchema: {
        format: 'uri',
        pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
        maxLength: 2048,
      },
    }),
  )
  url: string;

  @property(
    textColumn('description', {
      jsonSchema: {maxLength: 500, nullable: true},
    }),
  )
  description?: string | null;

  @property(
    textListColumn(
      'events',
      {enum: [...WEBHOOK_EVENTS]},
      WEBHOOK_EVENTS.length,
      {
        required: true,
        description: 'Events sent to this endpoint (at least one)',
        jsonSchema: {minItems: 1, uniqueItems: true},
      },
    ),
  )
  events: string[];

  @property(
    idListColumn('scheduler_ids', {
      description:
        'Only events of these schedulers; empty (the default): every scheduler the owner may see. Operators may name only schedulers they own',
      jsonSchema: {maxItems: 1000},
    }),
  )
  scheduler_ids?: number[];

  @property(
    booleanColumn('active', {
      description:
        'false once disabled (a 410 answer, or 20 failed deliveries in a row); set true again to resume',
    }),
  )
  active?: boolean;

  @property(timestampColumn('disabled_at', {jsonSchema: {nullable: true}}))
  disabled_at?: Date | string | null;

  @property(textColumn('disabled_reason', {jsonSchema: {nullable: true}}))
  disabled_reason?: string | null;

  @property(
    integerColumn('consecutive_failures', {
      description: 'Deliveries failed for good since the last success',
    }),
  )
  consecutive_failures?: number;

  @property(textColumn('signing_secret'))
  signing_secret?: string;

  @property(textColumn('previous_signing_secret'))
  previous_signing_secret?: string | null;

  @property(
    timestampColumn('previous_secret_expires_at', {
      description:
        'Until then the previous signing secret signs as well (after a rotation)',
      jsonSchema: {nullable: true},
    }),
  )
  previous_secret_expires_at?: Date | string | null;

  @property(
    timestampColumn('secret_rotated_at', {jsonSchema: {nullable: true}}),
  )
  secret_rotated_at?: Date | string | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Webhook>) {
    super(data);
  }
}
