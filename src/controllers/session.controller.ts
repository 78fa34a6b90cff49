import {authenticate} from '@loopback/authentication';
import {repositorySql} from '../database/repository-sql';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {
  HttpErrors,
  oas,
  patch,
  post,
  Request,
  requestBody,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {appendAuditEvent} from '../audit/audit-event';
import type {CurrentUser} from '../auth/current-user';
import {hashPassword, verifyPassword} from '../auth/password-hasher';
import {passwordProblem} from '../auth/password-policy';
import {EVERYONE} from '../auth/roles';
import {MIN_PASSWORD_LENGTH} from '../config';
import type {UserRepository} from '../crud/repositories';
import {unprocessable} from '../resources/hook-helpers';
import {
  KnownLocks,
  LoginThrottle,
  passwordChangeKeys,
} from '../auth/login-throttle';
import {AuthBindings} from '../keys';

/** Signing out: one token, all of a user's tokens, and changing one's own password. */
@oas.tags('Auth')
@authenticate('jwt')
@authorize({allowedRoles: EVERYONE})
export class SessionController {
  constructor(
    @inject('repositories.UserRepository')
    private readonly users: UserRepository,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(AuthBindings.KNOWN_LOCKS) private readonly knownLocks: KnownLocks,
    @inject(AuthBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private get execute() {
    return repositorySql(this.users);
  }

  @post('/auth/logout', {
    summary: 'Sign out the presented token',
    description:
      'Revokes the bearer token of this request until it would expire (204). Any role.',
    responses: {'204': {description: 'The token no longer works'}},
  })
  async logout(): Promise<void> {
    if (!this.user.tokenId) {
      throw new HttpErrors.UnprocessableEntity(
        'This token has no id to revoke (issued by an earlier version): use POST /auth/logout-all',
      );
    }
    await this.execute(
      `INSERT INTO revoked_token (jti, user_id, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (jti) DO NOTHING`,
      [this.user.tokenId, this.user.id, this.user.tokenExpiresAt],
    );
    // The deny list only needs tokens that have not expired yet.
    await this.execute(
      `DELETE FROM revoked_token WHERE expires_at < now()`,
      [],
    );
    await appendAuditEvent(this.execute, {
      actorUserId: this.user.id,
      action: 'logout',
      entity: 'session',
      entityId: this.user.id,
    });
  }

  @post('/auth/logout-all', {
    summary: 'Revoke every token of a user',
    description:
      'Every token issued so far for the user stops working (204): yourself by default; admins may name any user with {"user_id"}. Any role.',
    responses: {'204': {description: 'Earlier tokens no longer work'}},
  })
  async logoutAll(
    @requestBody({
      required: false,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'LogoutAllRequest',
            additionalProperties: false,
            properties: {user_id: {type: 'integer', minimum: 1}},
          },
        },
      },
    })
    body: {user_id?: number} = {},
  ): Promise<void> {
    const target = body?.user_id ?? this.user.id;
    if (target !== this.user.id && this.user.role !== 'admin') {
      throw new HttpErrors.Forbidden(
        "Only admins may revoke another user's tokens",
      );
    }
    const rows = (await this.execute(
      `UPDATE app_user SET tokens_valid_after = clock_timestamp()
        WHERE id = $1 RETURNING id`,
      [target],
    )) as unknown[];
    if (rows.length === 0) {
      throw new HttpErrors.NotFound(`User ${target} does not exist`);
    }
    await appendAuditEvent(this.execute, {
      actorUserId: this.user.id,
      action: 'tokens.revoked',
      entity: 'user',
      entityId: target,
    });
  }

  @patch('/users/me/password', {
    summary: 'Change your own password',
    description: `Needs the current password; the new one must be at least ${MIN_PASSWORD_LENGTH} characters and not a common one (422 naming the rule). Every earlier token of yours stops working; sign in again (204). Any role.`,
    responses: {'204': {description: 'Password changed'}},
  })
  @oas.response(401, {description: 'The current password is wrong'})
  async changePassword(
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'PasswordChange',
            additionalProperties: false,
            required: ['current_password', 'new_password'],
            properties: {
              current_password: {type: 'string', minLength: 1, maxLength: 1000},
              new_password: {type: 'string', minLength: 1, maxLength: 1000},
            },
          },
        },
      },
    })
    body: {
      current_password: string;
      new_password: string;
    },
  ): Promise<void> {
    const user = await this.users.findById(this.user.id);
    // Guesses of the current password are throttled like sign-ins, or a
    // stolen token would guess the password without limit; on a key of
    // their own, so nobody's failed sign-ins (nor a shared address's) can
    // keep the user from changing the password.
    const keys = passwordChangeKeys(this.user.id);
    const throttle = new LoginThrottle(
      this.execute,
      this.clock,
      this.knownLocks,
    );
    await throttle.admitOrRefuse(keys);
    if (!(await verifyPassword(body.current_password, user.password_hash))) {
      const locked = await throttle.failed(keys);
      await appendAuditEvent(this.execute, {
        actorUserId: this.user.id,
        action:
          locked > 0 ? 'password.change_locked' : 'password.change_failed',
        entity: 'user',
        entityId: this.user.id,
        changes: {address: [null, (this.request.ip ?? 'unknown').slice(0, 64)]},
      });
      throw new HttpErrors.Unauthorized('The current password is wrong');
    }
    await throttle.succeeded(keys);
    const problem = passwordProblem(body.new_password, user.email);
    if (problem) {
      throw unprocessable({
        path: '/new_password',
        code: problem.code,
        message: `new_password ${problem.message}`,
      });
    }
    await this.users.updateById(this.user.id, {
      password_hash: await hashPassword(body.new_password),
    });
    await appendAuditEvent(this.execute, {
      actorUserId: this.user.id,
      action: 'password.changed',
      entity: 'user',
      entityId: this.user.id,
      changes: {password_hash: ['[redacted]', '[redacted]']},
    });
  }
}
