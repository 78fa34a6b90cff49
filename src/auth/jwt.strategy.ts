import {AuthenticationStrategy} from '@loopback/authentication';
import {repositorySql} from '../database/repository-sql';
import {inject} from '@loopback/core';
import {HttpErrors, Request} from '@loopback/rest';
import {AuthBindings} from '../keys';
import type {UserRepository} from '../crud/repositories';
import {CurrentUser, toCurrentUser} from './current-user';
import type {TokenClaims, TokenService} from './token.service';

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
    const claims = this.tokens.verify(match[1]);
    const user = await this.users.findOne({where: {id: claims.userId}});
    if (!user?.active || (await this.revoked(claims))) {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    return {
      ...toCurrentUser(user),
      tokenId: claims.tokenId,
      tokenExpiresAt: claims.expiresAt,
    };
  }

  /**
   * Revoked: issued before the user's tokens_valid_after (a password, role
   * or active change, or logout-all), or signed out alone (its jti is on
   * the deny list until it expires).
   */
  private async revoked(claims: TokenClaims): Promise<boolean> {
    const rows = (await repositorySql(this.users)(
      `SELECT u.tokens_valid_after > $2 AS before_revocation,
              EXISTS (SELECT 1 FROM revoked_token r WHERE r.jti = $3::uuid) AS signed_out
         FROM app_user u WHERE u.id = $1`,
      [claims.userId, claims.issuedAt, claims.tokenId ?? null],
    )) as Array<{before_revocation: boolean; signed_out: boolean}>;
    return rows.length === 0 || rows[0].before_revocation || rows[0].signed_out;
  }
}
