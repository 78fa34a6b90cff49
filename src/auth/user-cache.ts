import type {CurrentUser} from './current-user';
import type {TokenClaims} from './token.service';

/** Tokens whose users one API process keeps at most; past it the oldest go. */
export const MAX_CACHED_TOKENS = 10_000;

/**
 * The users behind bearer tokens, for a few seconds: a client sending many
 * requests with one token costs one lookup, not one per request. An entry
 * answers only while the cache is trusted, that is while something tells it
 * of every change that takes access away (see AuthChangeFeed); each such
 * change, and each change of trust, empties it. Only users found valid are
 * kept: a refusal is looked up again next time.
 */
export class AuthUserCache {
  private readonly entries = new Map<
    string,
    {user: CurrentUser; expiresAt: number}
  >();
  private trusted = false;

  constructor(
    /** How long an entry answers; 0 turns the cache off. */
    readonly ttlMs: number,
    private readonly maxEntries = MAX_CACHED_TOKENS,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0 && this.trusted;
  }

  /** The token's user, if one was found valid within the last ttlMs. */
  get(claims: TokenClaims): CurrentUser | undefined {
    if (!this.enabled) return undefined;
    const key = keyOf(claims);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.user;
  }

  set(claims: TokenClaims, user: CurrentUser): void {
    if (!this.enabled) return;
    if (this.entries.size >= this.maxEntries) {
      // Insertion order: the first key is the oldest entry.
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(keyOf(claims), {
      user,
      expiresAt: this.now() + this.ttlMs,
    });
  }

  /** Forgets every user: access may have been taken away from any of them. */
  clear(): void {
    this.entries.clear();
  }

  /** Whether changes reach the cache now; either way it starts empty. */
  trust(trusted: boolean): void {
    this.trusted = trusted;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** What the user lookup depends on: the user, when the token was issued, and its id. */
function keyOf(claims: TokenClaims): string {
  return `${claims.userId}:${claims.issuedAt.getTime()}:${claims.tokenId ?? ''}`;
}
