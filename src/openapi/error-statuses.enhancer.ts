import {getAuthenticateMetadata} from '@loopback/authentication';
import {getAuthorizationMetadata} from '@loopback/authorization';
import {Context, CoreBindings, inject, injectable} from '@loopback/core';
import {
  asSpecEnhancer,
  OASEnhancer,
  OpenApiSpec,
  OperationObject,
  ParameterObject,
} from '@loopback/rest';
import {ROLES} from '../models/user-role';
import {controllerClasses} from './controller-classes';
import {errorResponse} from './error-responses.enhancer';
import {forEachOperation} from './operations';

/** What each client-error status means wherever the API answers it. */
export const CLIENT_ERRORS = {
  '400':
    'Malformed request: unparsable JSON body or filter, a `__proto__` key, or a bad path or query parameter',
  '401':
    'Missing, malformed, expired or wrongly signed bearer token, or an inactive user',
  '403': 'The caller is authenticated but may not do this',
  '404': 'No record with this id, or none the caller may see',
  '413': 'The body is larger than REQUEST_BODY_LIMIT',
  '422': 'Validation failed: error.details names each invalid field',
} as const;

type Status = keyof typeof CLIENT_ERRORS;

/**
 * The client errors an operation can answer, read from what enforces them:
 * the bearer token (401), a role list short of every role (403), path
 * parameters (400 bad id, 404), query parameters (400, and 422 for a filter)
 * and a JSON body (400, 413, 422). A 429 comes only from an operation's
 * own limit (login throttle, queued reports), declared where it is made.
 */
function statusesOf(
  operation: OperationObject,
  guard: {authenticated: boolean; allowedRoles?: readonly string[]},
): Status[] {
  const statuses = new Set<Status>();
  const parameters = (operation.parameters ?? []) as ParameterObject[];
  const {allowedRoles} = guard;
  if (guard.authenticated) statuses.add('401');
  if (allowedRoles && !ROLES.every(role => allowedRoles.includes(role))) {
    statuses.add('403');
  }
  if (parameters.some(p => p.in === 'path')) {
    statuses.add('400');
    statuses.add('404');
  }
  if (parameters.some(p => p.in === 'query')) statuses.add('400');
  if (parameters.some(p => p.in === 'query' && p.content)) statuses.add('422');
  if (operation.requestBody) {
    statuses.add('400');
    statuses.add('413');
    statuses.add('422');
  }
  return [...statuses];
}

/**
 * Lists on every operation the client errors it can really give, in the
 * uniform error body (keeping an operation's own wording where it has one).
 */
@injectable(asSpecEnhancer)
export class ErrorStatusesEnhancer implements OASEnhancer {
  name = 'error-statuses';

  constructor(
    @inject(CoreBindings.APPLICATION_INSTANCE)
    private readonly app: Context,
  ) {}

  modifySpec(spec: OpenApiSpec): OpenApiSpec {
    const controllers = controllerClasses(this.app);
    forEachOperation(spec, operation => {
      const controller = controllers.get(operation['x-controller-name']);
      const method = operation['x-operation-name'];
      if (!controller || typeof method !== 'string') return;
      const guard = {
        authenticated: (getAuthenticateMetadata(controller, method) ?? []).some(
          entry => !entry.skip,
        ),
        allowedRoles: getAuthorizationMetadata(controller.prototype, method)
          ?.allowedRoles,
      };
      const responses = (operation.responses ??= {});
      for (const status of statusesOf(operation, guard)) {
        responses[status] ??= errorResponse(CLIENT_ERRORS[status]);
      }
    });
    return spec;
  }
}
