import {authenticate} from '@loopback/authentication';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import type {AnyObject} from '@loopback/repository';
import {
  get,
  HttpErrors,
  oas,
  param,
  post,
  Request,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import {auditedCreate, visible} from '../crud/audited-write';
import {idParam} from '../crud/crud-controller.factory';
import {createBodySchema} from '../crud/crud-schemas';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {currentRequestId} from '../logging/request-context';
import {Webhook} from '../models';
import {WEBHOOK_EVENT_BODY_REF} from '../openapi/webhook-events.enhancer';
import {rotateSigningSecret} from '../outbound/secret-rotation';
import {newSigningSecret} from '../outbound/webhook-signature';
import {RESOURCES} from '../resources';
import {webhookBodyErrors} from '../resources/webhook.hooks';
import {validationError} from '../validation/validation-error';
import {
  DEFAULT_ROTATION_WINDOW_MINUTES,
  ROTATE_SECRET_REQUEST_SCHEMA,
  ROTATED_SECRET_SCHEMA,
  SIGNING_SECRET,
} from './http-target-secret.controller';
import {changeReason} from './scheduler-run.controller';

const DELIVERY_SCHEMA = {
  type: 'object',
  title: 'WebhookDelivery',
  required: ['id', 'event', 'status', 'attempts', 'created_at'],
  properties: {
    id: {type: 'integer'},
    webhook_id: {type: 'integer'},
    event: {type: 'string', description: 'The event type, or ping'},
    message_id: {
      type: 'string',
      description: 'The webhook-id header: the same on every attempt',
    },
    status: {
      type: 'string',
      enum: ['pending', 'retrying', 'succeeded', 'failed', 'cancelled'],
    },
    attempts: {type: 'integer'},
    status_code: {
      type: 'integer',
      nullable: true,
      description: 'HTTP status of the last attempt',
    },
    error: {
      type: 'string',
      nullable: true,
      description:
        'Why the last attempt failed (the status, a timeout, or the SSRF guard rule that refused the address)',
    },
    created_at: {type: 'string', format: 'date-time'},
    last_attempt_at: {type: 'string', format: 'date-time', nullable: true},
    finished_at: {type: 'string', format: 'date-time', nullable: true},
    payload: WEBHOOK_EVENT_BODY_REF,
  },
};
// The id is a bigint (a string from node-postgres; a cast to int overflows
// past 2^31 - 1): read as a number by `deliveryRows`, exact below 2^53.
const DELIVERY_COLUMNS = `id, webhook_id, event, message_id, status, attempts, status_code,
  error, created_at, last_attempt_at, finished_at, payload`;

/** Delivery rows with their bigint id as a number. */
function deliveryRows(rows: unknown): Array<{id: number}> {
  return (rows as Array<{id: string | number}>).map(row => ({
    ...row,
    id: Number(row.id),
  }));
}

/**
 * (Not WebhookController: that is the generic resource controller's name.)
 * The webhook operations the generic resource does not offer: creation
 * (the only answer with the signing secret), secret rotation, the delivery
 * log and a test ping. Operators reach only their own webhooks (404
 * otherwise), admins every one.
 */
@oas.tags('Webhook')
@authenticate(...BEARER_STRATEGIES)
export class WebhookActionsController {
  constructor(
    @inject('repositories.WebhookRepository')
    private readonly webhooks: EntityRepository<Webhook>,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  private get sql() {
    return repositorySql(this.webhooks);
  }

  @post('/webhooks', {
    summary: 'Create a Webhook',
    description:
      'Stores a new endpoint for the caller and answers it (201) with its signing secret: the only time the secret is shown. Operators may name only schedulers they own in scheduler_ids, and hear only of their own schedulers. Roles: admin, operator.',
    responses: {
      '201': {
        description: 'The created Webhook and its signing secret',
        content: {
          'application/json': {
            schema: {
              title: 'WebhookWithSecret',
              allOf: [
                {$ref: '#/components/schemas/Webhook'},
                {
                  type: 'object',
                  required: ['signing_secret'],
                  properties: {signing_secret: SIGNING_SECRET},
                },
              ],
            },
          },
        },
      },
      '422': {description: 'Validation failed'},
    },
  })
  @authorize({allowedRoles: OPERATORS})
  async create(
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: createBodySchema(
            RESOURCES.find(resource => resource.model === Webhook)!,
          ),
        },
      },
    })
    body: AnyObject,
  ): Promise<AnyObject> {
    const errors = await webhookBodyErrors(this.sql, this.user, body);
    if (errors.length > 0) throw validationError(errors);
    const secret = newSigningSecret();
    const data = {...body, user_id: this.user.id, signing_secret: secret};
    const stored = await auditedCreate(
      this.webhooks,
      {actorUserId: this.user.id, entity: 'webhook', request: this.request},
      data,
    );
    this.response.status(201);
    return {...visible(stored), signing_secret: secret};
  }

  @post('/webhooks/{id}/rotate-secret', {
    summary: 'Rotate the signing secret of a webhook',
    description: `Makes a new signing secret and answers it, once. The previous secret keeps signing beside the new one (two signatures in webhook-signature) for rotation_window_minutes (${DEFAULT_ROTATION_WINDOW_MINUTES} unless given; 0 ends it at once). Audited. Roles: admin, operator (own webhooks).`,
    responses: {
      '200': {
        description: 'The new secret and the end of the rotation window',
        content: {'application/json': {schema: ROTATED_SECRET_SCHEMA}},
      },
      '404': {description: 'No webhook of yours has this id'},
    },
  })
  @authorize({allowedRoles: OPERATORS})
  async rotateSecret(
    @idParam(Webhook) id: number,
    @requestBody({
      required: false,
      content: {'application/json': {schema: ROTATE_SECRET_REQUEST_SCHEMA}},
    })
    body: {rotation_window_minutes?: number; reason?: string} | null = {},
  ): Promise<{
    id: number;
    signing_secret: string;
    previous_secret_expires_at: string;
  }> {
    const rotated = await rotateSigningSecret(this.sql, {
      table: 'webhook',
      id,
      actorUserId: this.user.id,
      windowMinutes:
        body?.rotation_window_minutes ?? DEFAULT_ROTATION_WINDOW_MINUTES,
      reason: changeReason(this.request, body?.reason),
      requestId: currentRequestId(),
      scope: this.ownScope(),
    });
    if (!rotated) throw this.notFound(id);
    return {
      id,
      signing_secret: rotated.secret,
      previous_secret_expires_at: rotated.until.toISOString(),
    };
  }

  @get('/webhooks/{id}/deliveries', {
    summary: 'The delivery log of a webhook',
    description:
      'Deliveries newest first: event, attempts, status code of the last attempt, times and the last error (a refused address names the SSRF guard rule). Roles: admin, operator (own webhooks).',
    responses: {
      '200': {
        description: 'Deliveries, newest first',
        content: {
          'application/json': {
            schema: {type: 'array', items: DELIVERY_SCHEMA},
          },
        },
      },
      '404': {description: 'No webhook of yours has this id'},
    },
  })
  @authorize({allowedRoles: OPERATORS})
  async deliveries(
    @idParam(Webhook) id: number,
    @param.query.integer('limit', {
      schema: {type: 'integer', minimum: 1, maximum: 1000, default: 100},
    })
    limit = 100,
  ): Promise<object[]> {
    await this.assertVisible(id);
    return deliveryRows(
      await this.sql(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_delivery
          WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2`,
        [id, limit],
      ),
    );
  }

  @post('/webhooks/{id}/test', {
    summary: 'Send a ping to a webhook',
    description:
      'Queues one ping event ({"type": "ping", ...}), signed as every delivery; it is sent once (no retries), also to a disabled endpoint, and its outcome never disables one. Follow it in the delivery log. Roles: admin, operator (own webhooks).',
    responses: {
      '202': {
        description: 'The queued delivery',
        content: {'application/json': {schema: DELIVERY_SCHEMA}},
      },
      '404': {description: 'No webhook of yours has this id'},
    },
  })
  @authorize({allowedRoles: OPERATORS})
  async test(@idParam(Webhook) id: number): Promise<object> {
    await this.assertVisible(id);
    const rows = deliveryRows(
      await this.sql(
        `INSERT INTO webhook_delivery (webhook_id, event, message_id, payload)
       VALUES ($1, 'ping', 'msg_' || gen_random_uuid(),
               jsonb_build_object(
                 'type', 'ping',
                 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 'data', jsonb_build_object('webhook_id', $1::int)))
       RETURNING ${DELIVERY_COLUMNS}`,
        [id],
      ),
    );
    this.response.status(202);
    return rows[0];
  }

  /** Operators reach only their own webhooks. */
  private ownScope(): {condition: string; value: unknown} | undefined {
    return this.user.role === 'admin'
      ? undefined
      : {condition: 'user_id = $7', value: this.user.id};
  }

  private async assertVisible(id: number): Promise<void> {
    const rows = (await this.sql(
      `SELECT id FROM webhook WHERE id = $1 AND ($2 OR user_id = $3)`,
      [id, this.user.role === 'admin', this.user.id],
    )) as unknown[];
    if (rows.length === 0) throw this.notFound(id);
  }

  private notFound(id: number): Error {
    return new HttpErrors.NotFound(`Entity not found: Webhook with id ${id}`);
  }
}
