import {
  AuthorizationContext,
  AuthorizationDecision,
  AuthorizationMetadata,
  Authorizer,
} from '@loopback/authorization';
import {Provider} from '@loopback/core';
import type {CurrentUser} from './current-user';

/** Allows a call when the caller's role is one the operation lists. */
export class RoleAuthorizerProvider implements Provider<Authorizer> {
  value(): Authorizer {
    return async (
      context: AuthorizationContext,
      metadata: AuthorizationMetadata,
    ) => {
      const user = context.principals[0] as CurrentUser | undefined;
      if (!user || !metadata.allowedRoles) return AuthorizationDecision.DENY;
      return metadata.allowedRoles.includes(user.role)
        ? AuthorizationDecision.ALLOW
        : AuthorizationDecision.DENY;
    };
  }
}
