import {getAuthenticateMetadata} from '@loopback/authentication';
import {Context, CoreBindings, inject, injectable} from '@loopback/core';
import {asSpecEnhancer, OASEnhancer, OpenApiSpec} from '@loopback/rest';
import {controllerClasses} from './controller-classes';
import {forEachOperation} from './operations';

export const BEARER_SCHEME_NAME = 'bearerAuth';
export const API_KEY_SCHEME_NAME = 'apiKeyAuth';

/**
 * Declares the JWT bearer scheme and marks each operation whose controller
 * method is behind `@authenticate` with it, so the explorer offers
 * "Authorize" and generated clients know which calls need the token. The
 * marks come from the same metadata the authentication action enforces, so
 * the document cannot drift from what the server does. Public operations say
 * so explicitly (`security: []`).
 */
@injectable(asSpecEnhancer)
export class BearerSecurityEnhancer implements OASEnhancer {
  name = 'bearer-security';

  constructor(
    @inject(CoreBindings.APPLICATION_INSTANCE)
    private readonly app: Context,
  ) {}

  modifySpec(spec: OpenApiSpec): OpenApiSpec {
    const controllers = controllerClasses(this.app);
    spec.components = {
      ...spec.components,
      securitySchemes: {
        ...spec.components?.securitySchemes,
        [BEARER_SCHEME_NAME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'The token from POST /auth/login',
        },
        [API_KEY_SCHEME_NAME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'tsk_ API key',
          description:
            'An API key from POST /api-keys (tsk_…), sent as Authorization: Bearer tsk_…',
        },
      },
    };
    forEachOperation(spec, operation => {
      const controller = controllers.get(operation['x-controller-name']);
      const method = operation['x-operation-name'];
      if (!controller || typeof method !== 'string') return;
      const metadata = getAuthenticateMetadata(controller, method);
      const strategies = (metadata ?? [])
        .filter(entry => !entry.skip)
        .map(entry => entry.strategy);
      operation.security = [
        ...(strategies.includes('jwt') ? [{[BEARER_SCHEME_NAME]: []}] : []),
        ...(strategies.includes('api-key')
          ? [{[API_KEY_SCHEME_NAME]: []}]
          : []),
      ];
    });
    return spec;
  }
}
