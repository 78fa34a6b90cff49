import {AuthenticationStrategy} from '@loopback/authentication';
import {repositorySql} from '../database/repository-sql';
import {BindingScope, inject, injectable} from '@loopback/core';
import {HttpErrors, Request} from '@loopback/rest';
import {AuthBindings} from '../keys';
import type {UserRepository} from '../crud/repositories';
import type {User} from '../models';
import {CurrentUser, toCurrentUser} from './current-user';
import type {TokenClaims, TokenService} from './token.service';
import {AuthUserCache} from './user-cache';

// The scheme is case-insensitive (RFC 7235): `bearer` and `BEARER` too.
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i;

/** `Authorization: Bearer <jwt>` for an existing, active user. */
// Nothing per request: one instance serves every request.
@injectable({scope: BindingScope.SINGLETON})
export class JwtStrategy implements AuthenticationStrategy {
  name = 'jwt';

  constructor(
    @inject(AuthBindings.TOKEN_SERVICE) private readonly tokens: TokenService,
    @inject('repositories.UserRepository')
    private readonly users: UserRepository,
    @inject(AuthBindings.USER_CACHE, {optional: true})
    private readonly cache: AuthUserCache = new AuthUserCache(0),
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
    const token = match[1];
    let verified = this.cache.get(token);
    if (!verified || !this.tokens.isCurrent(verified.claims)) {
      // Taken before the lookup reads: a change heard while it runs voids it.
      const generation = this.cache.generation;
      await this.tokens.ensureSecret();
      const claims = this.tokens.verify(token);
      const found = await this.currentUser(claims);
      if (!found) throw new HttpErrors.Unauthorized('Invalid or expired token');
      verified = {claims, user: found};
      this.cache.set(token, claims, found, generation);
    }
    const {claims, user} = verified;
    return {
      ...user,
      tokenId: claims.tokenId,
      tokenExpiresAt: claims.expiresAt,
    };
  }

  /**
   * The token's user, in one statement, unless the token no longer counts:
   * the user is gone or inactive, the token was issued before the user's
   * tokens_valid_after (a password, role or active change, or logout-all),
   * or it was signed out alone (its jti on the deny list until it expires).
   */
  private async currentUser(
    claims: TokenClaims,
  ): Promise<CurrentUser | undefined> {
    const rows = (await repositorySql(this.users)(
      `SELECT u.id, u.email, u.name, u.role, u.group_id
         FROM app_user u
        WHERE u.id = $1 AND u.active
          AND u.tokens_valid_after <= $2
          AND NOT EXISTS (SELECT 1 FROM revoked_token r WHERE r.jti = $3::uuid)`,
      [claims.userId, claims.issuedAt, claims.tokenId ?? null],
    )) as Array<Pick<User, 'id' | 'email' | 'name' | 'role' | 'group_id'>>;
    return rows.length === 1 ? toCurrentUser(rows[0] as User) : undefined;
  }
}
