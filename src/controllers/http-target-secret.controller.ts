import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import type {AnyObject} from '@loopback/repository';
import {
  HttpErrors,
  oas,
  post,
  Request,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import {idParam} from '../crud/crud-controller.factory';
import {createBodySchema} from '../crud/crud-schemas';
import {auditedWrite, visible} from '../crud/audited-write';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {currentRequestId} from '../logging/request-context';
import {HttpTarget} from '../models';
import {newSigningSecret} from '../outbound/webhook-signature';
import {RESOURCES} from '../resources';
import {httpTargetChange} from '../resources/http-target.hooks';
import {changeReason} from './scheduler-run.controller';

/** How long the previous secret keeps signing after a rotation, unless the body says. */
export const DEFAULT_ROTATION_WINDOW_MINUTES = 24 * 60;

const HTTP_TARGET_REF = {$ref: '#/components/schemas/HttpTarget'};
const SIGNING_SECRET = {
  type: 'string',
  description:
    'Standard Webhooks signing secret (whsec_ + base64 of 32 bytes). Shown only in this answer: store it now',
};

/**
 * The two operations that reveal an HTTP target's signing secret, once:
 * creating the target and rotating its secret.
 */
@oas.tags('HttpTarget')
@authenticate(...BEARER_STRATEGIES)
export class HttpTargetSecretController {
  constructor(
    @inject('repositories.HttpTargetRepository')
    private readonly targets: EntityRepository<HttpTarget>,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  @post('/http-targets', {
    summary: 'Create a HttpTarget',
    description:
      'Stores a new HTTP target and answers it as stored (201), with its signing secret: the only time the secret is shown. Credential headers (Authorization, Proxy-Authorization, Cookie) given in headers are moved to the write-only secret_headers. Roles: admin, operator.',
    responses: {
      '201': {
        description: 'The created HttpTarget and its signing secret',
        content: {
          'application/json': {
            schema: {
              title: 'HttpTargetWithSecret',
              allOf: [
                HTTP_TARGET_REF,
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
            RESOURCES.find(resource => resource.model === HttpTarget)!,
          ),
        },
      },
    })
    body: AnyObject,
  ): Promise<AnyObject> {
    const secret = newSigningSecret();
    const data = {...httpTargetChange(body), signing_secret: secret};
    const stored = await auditedWrite(
      this.targets,
      {
        actorUserId: this.user.id,
        action: 'create',
        entity: 'http-target',
        request: this.request,
      },
      async options => {
        const created = await this.targets.create(data, options);
        const found = await this.targets.findById(
          created.getId(),
          undefined,
          options,
        );
        return {
          id: created.getId(),
          before: {},
          after: visible(found),
          result: found,
        };
      },
    );
    this.response.status(201);
    return {...visible(stored), signing_secret: secret};
  }

  @post('/http-targets/{id}/rotate-secret', {
    summary: 'Rotate the signing secret of an HTTP target',
    description: `Makes a new signing secret and answers it, once. The previous secret keeps signing beside the new one (two signatures in webhook-signature) for rotation_window_minutes (${DEFAULT_ROTATION_WINDOW_MINUTES} unless given; 0 ends it at once), so receivers can switch without dropping a call. Audited. Roles: admin, operator.`,
    responses: {
      '200': {
        description: 'The new secret and the end of the rotation window',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'RotatedSecret',
              required: ['id', 'signing_secret', 'previous_secret_expires_at'],
              properties: {
                id: {type: 'integer'},
                signing_secret: SIGNING_SECRET,
                previous_secret_expires_at: {
                  type: 'string',
                  format: 'date-time',
                  description: 'Until then the previous secret signs as well',
                },
              },
            },
          },
        },
      },
      '404': {description: 'No HTTP target has this id'},
    },
  })
  @authorize({allowedRoles: OPERATORS})
  async rotateSecret(
    @idParam(HttpTarget) id: number,
    @requestBody({
      required: false,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'RotateSecretRequest',
            additionalProperties: false,
            properties: {
              rotation_window_minutes: {
                type: 'integer',
                minimum: 0,
                maximum: 7 * 24 * 60,
              },
              reason: {type: 'string', maxLength: 500},
            },
          },
        },
      },
    })
    body: {rotation_window_minutes?: number; reason?: string} | null = {},
  ): Promise<{
    id: number;
    signing_secret: string;
    previous_secret_expires_at: string;
  }> {
    const reason = changeReason(this.request, body?.reason);
    const minutes =
      body?.rotation_window_minutes ?? DEFAULT_ROTATION_WINDOW_MINUTES;
    const secret = newSigningSecret();
    const sql = repositorySql(this.targets);
    const until = new Date(Date.now() + minutes * 60_000);
    // One statement: the rotation and its audit event commit together.
    const rows = (await sql(
      `WITH rotated AS (
         UPDATE http_target
            SET previous_signing_secret = signing_secret, signing_secret = $2,
                previous_secret_expires_at = $3, secret_rotated_at = now()
          WHERE id = $1
         RETURNING id
       ), audited AS (
         INSERT INTO audit_event (actor_user_id, action, entity, entity_id, reason, changes, request_id)
         SELECT $4, 'rotate-secret', 'http-target', $1::text, $5,
                jsonb_build_object('signing_secret', jsonb_build_array('[redacted]', '[redacted]'),
                                   'previous_secret_expires_at', jsonb_build_array(NULL, $3::text)),
                $6
           FROM rotated
       )
       SELECT id FROM rotated`,
      [
        id,
        secret,
        until,
        this.user.id,
        reason ?? null,
        currentRequestId() ?? null,
      ],
    )) as unknown[];
    if (rows.length === 0) {
      throw new HttpErrors.NotFound(
        `Entity not found: HttpTarget with id ${id}`,
      );
    }
    return {
      id,
      signing_secret: secret,
      previous_secret_expires_at: until.toISOString(),
    };
  }
}
