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
  SchemaObject,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import {idParam} from '../crud/crud-controller.factory';
import {createBodySchema} from '../crud/crud-schemas';
import {auditedCreate, visible} from '../crud/audited-write';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {currentRequestId} from '../logging/request-context';
import {HttpTarget} from '../models';
import {rotateSigningSecret} from '../outbound/secret-rotation';
import {newSigningSecret} from '../outbound/webhook-signature';
import {RESOURCES} from '../resources';
import {httpTargetChange} from '../resources/http-target.hooks';
import {changeReason} from './scheduler-run.controller';

/** How long the previous secret keeps signing after a rotation, unless the body says. */
export const DEFAULT_ROTATION_WINDOW_MINUTES = 24 * 60;

const HTTP_TARGET_REF = {$ref: '#/components/schemas/HttpTarget'};
export const SIGNING_SECRET: SchemaObject = {
  type: 'string',
  description:
    'Standard Webhooks signing secret (whsec_ + base64 of 32 bytes). Shown only in this answer: store it now',
};

/** The answer of a secret rotation (HTTP targets and webhooks). */
export const ROTATED_SECRET_SCHEMA: SchemaObject = {
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
};

/** The body of a secret rotation (HTTP targets and webhooks). */
export const ROTATE_SECRET_REQUEST_SCHEMA: SchemaObject = {
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
    const stored = await auditedCreate(
      this.targets,
      {actorUserId: this.user.id, entity: 'http-target', request: this.request},
      data,
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
            schema: ROTATED_SECRET_SCHEMA,
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
          schema: ROTATE_SECRET_REQUEST_SCHEMA,
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
    const rotated = await rotateSigningSecret(repositorySql(this.targets), {
      table: 'http_target',
      id,
      actorUserId: this.user.id,
      windowMinutes: minutes,
      reason,
      requestId: currentRequestId(),
    });
    if (!rotated) {
      throw new HttpErrors.NotFound(
        `Entity not found: HttpTarget with id ${id}`,
      );
    }
    const {secret, until} = rotated;
    return {
      id,
      signing_secret: secret,
      previous_secret_expires_at: until.toISOString(),
    };
  }
}
