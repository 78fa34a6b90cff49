import {inject} from '@loopback/core';
import {HttpErrors, oas, post, requestBody} from '@loopback/rest';
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
  ) {
    this.logger = componentLogger(logger, 'auth');
  }

  @post('/auth/login', {
    summary: 'Log in for a bearer token',
    description:
      'Exchanges an e-mail and password for an HS256 JWT valid for JWT_TTL. A wrong password, an unknown e-mail and an inactive user all get the same 401.',
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
    const user = await this.users.findOne({
      where: {email: credentials.email.trim().toLowerCase()},
    });
    // Hash even for an unknown e-mail: both failures take the same time.
    const valid = await verifyPassword(
      credentials.password,
      user?.password_hash ?? DUMMY_PASSWORD_HASH,
    );
    if (!user || !valid || !user.active) {
      this.logger.warn('Login failed');
      throw new HttpErrors.Unauthorized(INVALID);
    }
    this.logger.info('Login succeeded', {user_id: user.id, role: user.role});
    await this.tokens.ensureSecret();
    return this.tokens.issue(user.id!);
  }
}
