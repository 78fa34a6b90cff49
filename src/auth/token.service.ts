import {HttpErrors} from '@loopback/rest';
import jwt from 'jsonwebtoken';
import {createSecretKey, KeyObject, randomUUID} from 'node:crypto';
import type {JwtConfig} from '../config';

export interface IssuedToken {
  token: string;
  expires_at: string;
}

export interface TokenClaims {
  userId: number;
  expiresAt: Date;
  /** When it was issued (whole seconds, as in the token). */
  issuedAt: Date;
  /** The token's own id (`jti`), for revoking it alone. */
  tokenId?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const ALGORITHM = 'HS256';
/** Clock difference tolerated between the processes of an installation. */
const CLOCK_SKEW_SECONDS = 60;

/**
 * JWTs signed with HS256 only: the algorithm is pinned on verification, so
 * `alg: none` and RS/HS confusion are refused; `exp`, issuer and audience are
 * required, and so is `iat`, no older and no further from `exp` than JWT_TTL,
 * so even a leaked secret cannot mint long-lived tokens. The token carries
 * only the user id: role and active flag are read from the database on every
 * request, so changes apply at once.
 */
export class TokenService {
  private secret?: string;
  private key?: {secret: string; key: KeyObject};
  private loading?: Promise<void>;

  /** `loadSecret` supplies the installation's secret when JWT_SECRET is unset. */
  constructor(
    private readonly config: JwtConfig,
    private readonly clock: () => Date = () => new Date(),
    private readonly loadSecret?: () => Promise<string>,
  ) {
    this.secret = config.secret;
  }

  /** Loads the installation's secret once; after a failure the next call tries again. */
  async ensureSecret(): Promise<void> {
    if (this.secret !== undefined || !this.loadSecret) return;
    this.loading ??= this.loadSecret().then(
      secret => {
        this.secret = secret;
      },
      error => {
        this.loading = undefined;
        throw error;
      },
    );
    await this.loading;
  }

  private signingSecret(): string {
    if (this.secret === undefined) {
      throw new Error('The JWT signing secret is not loaded yet');
    }
    return this.secret;
  }

  /**
   * The secret as a key object, made once: given the string, jsonwebtoken
   * builds a key object from it on every verification (about 1 % of the
   * API's CPU on an authenticated read).
   */
  private verificationKey(): KeyObject {
    const secret = this.signingSecret();
    if (this.key?.secret !== secret) {
      this.key = {secret, key: createSecretKey(Buffer.from(secret, 'utf8'))};
    }
    return this.key.key;
  }

  /**
   * A token for `userId`. `notBefore` (the user's tokens_valid_after) moves
   * `iat` up to the next whole second after it, so a token issued in the
   * same second as a revocation is not refused by it.
   */
  issue(userId: number, notBefore?: Date): IssuedToken {
    const clockSeconds = Math.floor(this.clock().getTime() / 1000);
    const validFrom =
      notBefore && Number.isFinite(notBefore.getTime())
        ? Math.ceil(notBefore.getTime() / 1000)
        : 0;
    const now = Math.max(clockSeconds, validFrom);
    const exp = now + this.config.ttlSeconds;
    const token = jwt.sign(
      {sub: String(userId), iat: now, exp, jti: randomUUID()},
      this.signingSecret(),
      {
        algorithm: ALGORITHM,
        issuer: this.config.issuer,
        audience: this.config.audience,
      },
    );
    return {token, expires_at: new Date(exp * 1000).toISOString()};
  }

  /**
   * Whether verified claims still hold now: `exp` is the only check of
   * `verify` that time can turn (its limit on age follows from `exp` -
   * `iat` <= JWT_TTL), so a verified token kept for a while is rechecked
   * with this alone.
   */
  isCurrent(claims: TokenClaims): boolean {
    return this.clock().getTime() < claims.expiresAt.getTime();
  }

  verify(token: string): TokenClaims {
    const secret = this.verificationKey();
    const now = Math.floor(this.clock().getTime() / 1000);
    let payload: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(token, secret, {
        algorithms: [ALGORITHM],
        issuer: this.config.issuer,
        audience: this.config.audience,
        clockTimestamp: now,
        // Requires `iat` and refuses one older than the configured lifetime.
        maxAge: this.config.ttlSeconds,
      });
      if (typeof decoded === 'string') throw new Error('unexpected payload');
      payload = decoded;
    } catch {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    const userId = Number(payload.sub);
    if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number') {
      throw new HttpErrors.Unauthorized('Token has no expiry');
    }
    if (
      payload.iat > now + CLOCK_SKEW_SECONDS ||
      payload.exp - payload.iat > this.config.ttlSeconds
    ) {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    if (!Number.isInteger(userId) || userId < 1) {
      throw new HttpErrors.Unauthorized('Invalid or expired token');
    }
    return {
      userId,
      expiresAt: new Date(payload.exp * 1000),
      issuedAt: new Date(payload.iat * 1000),
      ...(typeof payload.jti === 'string' && UUID.test(payload.jti)
        ? {tokenId: payload.jti}
        : {}),
    };
  }
}
