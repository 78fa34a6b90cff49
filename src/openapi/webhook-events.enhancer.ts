import {injectable} from '@loopback/core';
import {
  asSpecEnhancer,
  OASEnhancer,
  OpenApiSpec,
  SchemaObject,
} from '@loopback/rest';
import {WEBHOOK_EVENTS} from '../webhooks/webhook-events';

const timestamp = {type: 'string', format: 'date-time'} as const;
const nullable = (type: string, extra: object = {}) => ({
  type,
  nullable: true,
  ...extra,
});

/** The envelope of every event body: its type, when it happened, and data. */
function envelope(
  types: readonly string[],
  data: object,
  description: string,
): SchemaObject {
  return {
    type: 'object',
    description,
    required: ['type', 'timestamp', 'data'],
    properties: {
      type: {type: 'string', enum: [...types]},
      timestamp: {
        ...timestamp,
        description: 'When the event was raised (UTC)',
      },
      data,
    },
  };
}

const RUN_EVENT = envelope(
  WEBHOOK_EVENTS.filter(event =>
    ['run.succeeded', 'run.failed', 'run.skipped'].includes(event),
  ),
  {
    type: 'object',
    required: ['scheduler_id', 'execution_id', 'execution_key', 'status'],
    properties: {
      scheduler_id: {type: 'integer'},
      execution_id: {type: 'integer'},
      execution_key: {type: 'string'},
      slot: nullable('string', {format: 'date-time'}),
      status: {type: 'string', enum: ['succeeded', 'failed', 'skipped']},
      status_reason: nullable('string'),
      attempts: nullable('integer'),
      started_at: nullable('string', {format: 'date-time'}),
      finished_at: nullable('string', {format: 'date-time'}),
      duration_ms: nullable('number'),
      last_error: nullable('string'),
      http_status: nullable('integer'),
    },
  },
  'A run ended: succeeded, failed after its retries, or was skipped (overlap policy, calendar, catch-up window)',
);

const PARKED_EVENT = envelope(
  ['run.parked'],
  {
    type: 'object',
    required: ['failed_task_id', 'failed_reason'],
    properties: {
      failed_task_id: {type: 'integer'},
      scheduler_id: nullable('integer'),
      execution_id: nullable('integer'),
      type: nullable('string'),
      failed_reason: {type: 'string'},
      retry_count: {type: 'integer'},
      failed_at: timestamp,
    },
  },
  'A failed run was parked as a failed task, ready to be re-driven',
);

const SCHEDULER_EVENT = envelope(
  ['scheduler.created', 'scheduler.updated', 'scheduler.deleted'],
  {
    type: 'object',
    required: ['scheduler_id'],
    properties: {
      scheduler_id: {type: 'integer'},
      description: {type: 'string'},
      schedule: nullable('string'),
      date_time: nullable('string', {format: 'date-time'}),
      timezone: nullable('string'),
      status: {type: 'boolean'},
      user_id: nullable('integer'),
      group_id: nullable('integer'),
      report_id: nullable('integer'),
      worker_id: nullable('integer'),
      reminder_id: nullable('integer'),
      http_target_id: nullable('integer'),
    },
  },
  'A scheduler was written through the API (its state after the change; before it, for a delete)',
);

const NOTICE_EVENT = envelope(
  ['notice.failure', 'notice.digest', 'notice.recovery', 'notice.missed_runs'],
  {
    type: 'object',
    required: ['kind', 'scheduler_id', 'title'],
    additionalProperties: true,
    properties: {
      kind: {
        type: 'string',
        enum: ['failure', 'digest', 'recovery', 'missed_runs'],
      },
      scheduler_id: {type: 'integer'},
      title: {type: 'string'},
      body: nullable('string'),
    },
  },
  'A failure, digest, recovery or missed-runs notice went to the scheduler owner; data holds the notice payload',
);

const PING_EVENT = envelope(
  ['ping'],
  {
    type: 'object',
    required: ['webhook_id'],
    properties: {webhook_id: {type: 'integer'}},
  },
  'Sent by POST /webhooks/{id}/test',
);

export const WEBHOOK_EVENT_SCHEMAS: Record<string, SchemaObject> = {
  WebhookRunEvent: RUN_EVENT,
  WebhookParkedEvent: PARKED_EVENT,
  WebhookSchedulerEvent: SCHEDULER_EVENT,
  WebhookNoticeEvent: NOTICE_EVENT,
  WebhookPingEvent: PING_EVENT,
};

/** Any event body a webhook receives. */
export const WEBHOOK_EVENT_BODY_REF = {
  $ref: '#/components/schemas/WebhookEventBody',
};

/**
 * Documents the bodies webhooks POST (Standard Webhooks envelope: type,
 * timestamp, data) as components, so receivers can generate types.
 */
@injectable(asSpecEnhancer)
export class WebhookEventsEnhancer implements OASEnhancer {
  name = 'webhook-events';

  modifySpec(spec: OpenApiSpec): OpenApiSpec {
    const refs = Object.keys(WEBHOOK_EVENT_SCHEMAS).map(name => ({
      $ref: `#/components/schemas/${name}`,
    }));
    spec.components = {
      ...spec.components,
      schemas: {
        ...spec.components?.schemas,
        ...structuredClone(WEBHOOK_EVENT_SCHEMAS),
        WebhookEventBody: {
          description:
            'The JSON body of a webhook delivery, signed with the webhook-id, webhook-timestamp and webhook-signature headers (Standard Webhooks)',
          oneOf: refs,
        },
      },
    };
    return spec;
  }
}
