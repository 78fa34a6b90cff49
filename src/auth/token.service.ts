import {HttpErrors} from '@loopback/rest';
import jwt from 'jsonwebtoken';
import type {JwtConfig} from '../config';

export interface IssuedToken {
  token: string;
  expires_at: string;
}

export interface TokenClaims {
  userId: number;
  expiresAt: Date;
}

const ALGORITHM = 'HS256';

/**
 * JWTs signed with HS256 only: the algorithm is pinned on verification, so
 * `alg: none` and RS/HS confusion are refused; `exp`, issuer and audience are
 * required. The token carries only the user id: role and active flag are read
 * from the database on every request, so changes apply at once.
 */
export class TokenService {
  constructor(
    private readonly config: JwtConfig,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  issue(userId: number): IssuedToken {
    const now = Math.floor(this.clock().getTime() / 1000);
    const exp = now + this.config.ttlSeconds;
    const token = jwt.sign(
      {sub: String(userId), iat: now, exp},
      this.config.secret,
      {
        algorithm: ALGORITHM,
        issuer: this.config.issuer,
        audience: this.config.audience,
      },
    );
    return {token, expires_at: new Date(exp * 1000).toISOString()};
  }

  verify(token: string): TokenClaims {
    let payload: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(token, this.config.secret, {
        algorithms: [ALGORITHM],
        issuer: this.config.issuer,
        audience: this.config.audience,
        clockTimestamp: Math.floor(this.clock().getTime() / 1000),
      });
      if (typeof decoded === 'string') throw new Error('unexpected payload');
      payload = decoded;
    } catch {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    const userId = Number(payload.sub);
    if (typeof payload.exp !== 'number') {
      throw new HttpErrors.Unauthorized('Token has no expiry');
    }
    if (!Number.isInteger(userId) || userId < 1) {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    return {userId, expiresAt: new Date(payload.exp * 1000)};
  }
}
