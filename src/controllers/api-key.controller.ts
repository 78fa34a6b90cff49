import {authenticate} from '@loopback/authentication';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {
  del,
  get,
  HttpErrors,
  oas,
  param,
  post,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {
  apiKeyHash,
  MAX_API_KEY_DAYS,
  newApiKey,
  roleAtMost,
} from '../auth/api-key';
import type {CurrentUser} from '../auth/current-user';
import {EVERYONE} from '../auth/roles';
import {ROLES, Role} from '../models/user-role';
import type {UserRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {fieldError, validationError} from '../validation/validation-error';

const DAY_MS = 24 * 60 * 60 * 1000;

const API_KEY_PROPERTIES = {
  id: {type: 'integer'},
  user_id: {type: 'integer'},
  name: {type: 'string'},
  role: {type: 'string', enum: [...ROLES]},
  key_prefix: {type: 'string', description: 'The first characters of the key'},
  expires_at: {type: 'string', format: 'date-time'},
  created_at: {type: 'string', format: 'date-time'},
  last_used_at: {type: 'string', format: 'date-time', nullable: true},
  revoked_at: {type: 'string', format: 'date-time', nullable: true},
};
const API_KEY_SCHEMA = {
  type: 'object',
  title: 'ApiKey',
  properties: API_KEY_PROPERTIES,
};
const COLUMNS = `id, user_id, name, role, key_prefix, expires_at, created_at, last_used_at, revoked_at`;

interface NewApiKey {
  name: string;
  expires_at: string;
  role?: Role;
}

/**
 * API keys for machines. Only a signed-in person (a JWT, never a key) makes,
 * lists or revokes keys: a leaked key cannot mint more.
 */
@oas.tags('ApiKey')
@authenticate('jwt')
export class ApiKeyController {
  constructor(
    @inject('repositories.UserRepository')
    private readonly users: UserRepository,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  private get sql() {
    return repositorySql(this.users);
  }

  @post('/api-keys', {
    summary: 'Create an API key for yourself',
    description: `Makes a key (tsk_ and 32 random bytes, base64url) for the caller, answered once in \`key\` and stored only as its SHA-256. expires_at lies in the future, at most ${MAX_API_KEY_DAYS} days ahead; role (the caller's unless given) may not be higher than the caller's. Send it as Authorization: Bearer tsk_…; it acts with the lower of its role and its owner's current one, and stops when the owner is deactivated. Audited. Roles: everyone.`,
    responses: {
      '201': {
        description: 'The key, shown this once',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'ApiKeyWithSecret',
              required: ['id', 'key', 'role', 'expires_at'],
              properties: {
                ...API_KEY_PROPERTIES,
                key: {type: 'string', description: 'Store it now'},
              },
            },
          },
        },
      },
      '422': {description: 'Validation failed'},
    },
  })
  @authorize({allowedRoles: EVERYONE})
  async create(
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'NewApiKey',
            additionalProperties: false,
            required: ['name', 'expires_at'],
            properties: {
              name: {type: 'string', minLength: 1, maxLength: 200},
              expires_at: {type: 'string', format: 'date-time'},
              role: {type: 'string', enum: [...ROLES]},
            },
          },
        },
      },
    })
    body: NewApiKey,
  ): Promise<object> {
    const role = body.role ?? this.user.role;
    const expiresAt = new Date(body.expires_at);
    const now = Date.now();
    const errors = [];
    if (!(expiresAt.getTime() > now)) {
      errors.push(
        fieldError('expires_at', 'past', 'expires_at must lie in the future'),
      );
    } else if (expiresAt.getTime() > now + MAX_API_KEY_DAYS * DAY_MS) {
      errors.push(
        fieldError(
          'expires_at',
          'tooLong',
          `a key lives at most ${MAX_API_KEY_DAYS} days`,
        ),
      );
    }
    if (!roleAtMost(role, this.user.role)) {
      errors.push(
        fieldError(
          'role',
          'roleTooHigh',
          `a key's role may not be higher than yours (${this.user.role})`,
        ),
      );
    }
    if (errors.length > 0) throw validationError(errors);
    const key = newApiKey();
    const rows = (await this.sql(
      `WITH created AS (
         INSERT INTO api_key (user_id, name, role, key_hash, key_prefix, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING ${COLUMNS}
       ), audited AS (
         INSERT INTO audit_event (actor_user_id, action, entity, entity_id, changes)
         SELECT $1, 'create', 'api-key', id::text,
                jsonb_build_object('name', jsonb_build_array(NULL, name),
                                   'role', jsonb_build_array(NULL, role),
                                   'expires_at', jsonb_build_array(NULL, expires_at))
           FROM created
       )
       SELECT * FROM created`,
      [
        this.user.id,
        body.name,
        role,
        apiKeyHash(key),
        key.slice(0, 8),
        expiresAt,
      ],
    )) as object[];
    this.response.status(201);
    return {...rows[0], key};
  }

  @get('/api-keys', {
    summary: 'List API keys',
    description:
      'Your own keys; admins see every key. Never the key itself. Roles: everyone.',
    responses: {
      '200': {
        description: 'Keys, newest first',
        content: {
          'application/json': {schema: {type: 'array', items: API_KEY_SCHEMA}},
        },
      },
    },
  })
  @authorize({allowedRoles: EVERYONE})
  async find(): Promise<object[]> {
    const admin = this.user.role === 'admin';
    return (await this.sql(
      `SELECT ${COLUMNS} FROM api_key
        WHERE $1 OR user_id = $2
        ORDER BY id DESC LIMIT 1000`,
      [admin, this.user.id],
    )) as object[];
  }

  @del('/api-keys/{id}', {
    summary: 'Revoke an API key',
    description:
      'The owner or an admin revokes a key: it stops working at once. Audited. Roles: everyone.',
    responses: {
      '204': {description: 'Revoked'},
      '404': {description: 'No key of yours has this id'},
    },
  })
  @authorize({allowedRoles: EVERYONE})
  async revoke(
    @param({
      name: 'id',
      in: 'path',
      required: true,
      schema: {type: 'integer', format: 'int32', minimum: 1},
    })
    id: number,
  ): Promise<void> {
    const rows = (await this.sql(
      `WITH revoked AS (
         UPDATE api_key
            SET revoked_at = COALESCE(revoked_at, now()),
                revoked_by = COALESCE(revoked_by, $2)
          WHERE id = $1 AND ($3 OR user_id = $2)
         RETURNING id
       ), audited AS (
         INSERT INTO audit_event (actor_user_id, action, entity, entity_id, changes)
         SELECT $2, 'revoke', 'api-key', id::text, '{}'::jsonb FROM revoked
       )
       SELECT id FROM revoked`,
      [id, this.user.id, this.user.role === 'admin'],
    )) as unknown[];
    if (rows.length === 0) {
      throw new HttpErrors.NotFound(`Entity not found: ApiKey with id ${id}`);
    }
    this.response.status(204);
  }
}
