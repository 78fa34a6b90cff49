import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, oas} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import type {CurrentUser} from '../auth/current-user';
import {EVERYONE} from '../auth/roles';
import {ROLES} from '../models/user-role';

export interface Me {
  id: number;
  email: string;
  name: string | null;
  role: string;
}

/**
 * Who the presented token belongs to: a client (the console) needs the role
 * to hide controls the caller may not use. The token carries only the user
 * id, so this is read fresh on every request.
 */
@oas.tags('Auth')
@authenticate(...BEARER_STRATEGIES)
@authorize({allowedRoles: EVERYONE})
export class CurrentUserController {
  constructor(
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
  ) {}

  @get('/auth/me', {
    summary: 'The signed-in user',
    description:
      'The id, e-mail, name and role of the user the bearer token belongs to (200). Any role.',
    responses: {
      '200': {
        description: 'The signed-in user',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'Me',
              additionalProperties: false,
              required: ['id', 'email', 'name', 'role'],
              properties: {
                id: {type: 'integer'},
                email: {type: 'string'},
                name: {type: 'string', nullable: true},
                role: {type: 'string', enum: [...ROLES]},
              },
            },
          },
        },
      },
    },
  })
  me(): Me {
    return {
      id: this.user.id,
      email: this.user.email,
      name: (this.user.name as string | undefined) ?? null,
      role: this.user.role,
    };
  }
}
