import {AuthenticationStrategy} from '@loopback/authentication';
import {inject} from '@loopback/core';
import {HttpErrors, Request} from '@loopback/rest';
import {AuthBindings} from '../keys';
import type {UserRepository} from '../crud/repositories';
import {CurrentUser, toCurrentUser} from './current-user';
import type {TokenService} from './token.service';

const BEARER = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/;

/** `Authorization: Bearer <jwt>` for an existing, active user. */
export class JwtStrategy implements AuthenticationStrategy {
  name = 'jwt';

  constructor(
    @inject(AuthBindings.TOKEN_SERVICE) private readonly tokens: TokenService,
    @inject('repositories.UserRepository')
    private readonly users: UserRepository,
  ) {}

  async authenticate(request: Request): Promise<CurrentUser> {
    const header = request.headers.authorization;
    if (!header) {
      throw new HttpErrors.Unauthorized('Authorization header is missing');
    }
    const match = BEARER.exec(header.trim());
    if (!match) {
      throw new HttpErrors.Unauthorized(
        'Authorization header must be "Bearer <token>"',
      );
    }
    await this.tokens.ensureSecret();
    const {userId} = this.tokens.verify(match[1]);
    const user = await this.users.findOne({where: {id: userId}});
    if (!user?.active) {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    return toCurrentUser(user);
  }
}
