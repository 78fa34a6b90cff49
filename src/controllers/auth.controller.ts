import {inject} from '@loopback/core';
import {repositorySql} from '../database/repository-sql';
import {
  HttpErrors,
  oas,
  post,
  Request,
  requestBody,
  RestBindings,
} from '@loopback/rest';
import {appendAuditEvent} from '../audit/audit-event';
import {KnownLocks, LoginThrottle, throttleKeys} from '../auth/login-throttle';
import {DUMMY_PASSWORD_HASH, verifyPassword} from '../auth/password-hasher';
import type {IssuedToken, TokenService} from '../auth/token.service';
import type {UserRepository} from '../crud/repositories';
import {AuthBindings, LoggingBindings} from '../keys';
import {componentLogger, Logger} from '../logging/logger';

const INVALID = 'Invalid email or password';

@oas.tags('Auth')
export class AuthController {
  private readonly logger: Logger;

  constructor(
    @inject('repositories.UserRepository')
    private readonly users: UserRepository,
    @inject(AuthBindings.TOKEN_SERVICE) private readonly tokens: TokenService,
    @inject(LoggingBindings.LOGGER) logger: Logger,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(AuthBindings.KNOWN_LOCKS) private readonly knownLocks: KnownLocks,
    @inject(AuthBindings.CLOCK, {optional: true})
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.logger = componentLogger(logger, 'auth');
  }

  private get execute() {
    return repositorySql(this.users);
  }

  @post('/auth/login', {
    summary: 'Log in for a bearer token',
    description:
      'Exchanges an e-mail and password for an HS256 JWT valid for JWT_TTL. A wrong password, an unknown e-mail and an inactive user all get the same 401. After 5 failures for an account (20 for a client address) further attempts are refused with 429 and Retry-After for a time that doubles with each failure, up to 15 minutes, without checking the password.',
    responses: {
      '200': {
        description: 'A bearer token for the Authorization header',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'LoginResponse',
              required: ['token', 'expires_at'],
              properties: {
                token: {type: 'string'},
                expires_at: {type: 'string', format: 'date-time'},
              },
            },
          },
        },
      },
    },
  })
  @oas.response(401, {description: INVALID})
  @oas.response(429, {
    description:
      'Too many failed attempts for this account or address: wait Retry-After seconds',
  })
  async login(
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'LoginRequest',
            additionalProperties: false,
            required: ['email', 'password'],
            properties: {
              email: {type: 'string', minLength: 1, maxLength: 320},
              password: {type: 'string', minLength: 1, maxLength: 1000},
            },
          },
        },
      },
    })
    credentials: {
      email: string;
      password: string;
    },
  ): Promise<IssuedToken> {
    const email = credentials.email.trim().toLowerCase();
    const keys = throttleKeys(email, this.request.ip ?? 'unknown');
    const throttle = new LoginThrottle(
      this.execute,
      this.clock,
      this.knownLocks,
    );
    // Refused before any hashing: a flood costs a lookup (none once this
    // process knows the lock), not a scrypt. The lock itself is the audit
    // event (login.locked); the request log has each 429.
    await throttle.admitOrRefuse(keys);
    const user = await this.users.findOne({where: {email}});
    // Hash even for an unknown e-mail: both failures take the same time.
    const valid = await verifyPassword(
      credentials.password,
      user?.password_hash ?? DUMMY_PASSWORD_HASH,
    );
    if (!user || !valid || !user.active) {
      const locked = await throttle.failed(keys);
      await throttle.pruneNowAndThen();
      this.logger.warn(
        'Login failed',
        locked > 0 ? {locked_for_s: locked} : {},
      );
      await this.audit(
        locked > 0 ? 'login.locked' : 'login.failed',
        user?.id ?? null,
        email,
      );
      throw new HttpErrors.Unauthorized(INVALID);
    }
    await throttle.succeeded(keys);
    this.logger.info('Login succeeded', {user_id: user.id, role: user.role});
    await this.audit('login.succeeded', user.id!, email);
    await this.tokens.ensureSecret();
    const rows = (await this.execute(
      `SELECT CASE WHEN isfinite(tokens_valid_after)
                THEN extract(epoch FROM tokens_valid_after)::float8 * 1000 END AS valid_after_ms
         FROM app_user WHERE id = $1`,
      [user.id],
    )) as Array<{valid_after_ms: number | string | null}>;
    const validAfter = rows[0]?.valid_after_ms;
    return this.tokens.issue(
      user.id!,
      validAfter == null ? undefined : new Date(Number(validAfter)),
    );
  }

  /** A sign-in event: never the password, only the e-mail that was tried and the address. */
  private audit(
    action: string,
    userId: number | null,
    email: string,
  ): Promise<void> {
    return appendAuditEvent(this.execute, {
      actorUserId: userId,
      action,
      entity: 'session',
      entityId: userId,
      changes: {
        email: [null, email.slice(0, 320)],
        address: [null, (this.request.ip ?? 'unknown').slice(0, 64)],
      },
    });
  }
}
