import type {CurrentUser} from './current-user';
import type {TokenClaims} from './token.service';

/** Tokens whose users one API process keeps at most; past it the oldest go. */
export const MAX_CACHED_TOKENS = 10_000;

/** A token found valid: what its signature said, and its user then. */
export interface VerifiedToken {
  claims: TokenClaims;
  user: CurrentUser;
}

/**
 * The users behind bearer tokens, for a few seconds: a client sending many
 * requests with one token costs one signature check and one lookup, not one
 * of each per request. Keyed by the token itself, so an entry stands only for
 * the exact token that was verified; its expiry is still checked on every use
 * (see TokenService.isCurrent). An entry answers only while the cache is
 * trusted, that is while something tells it of every change that takes
 * access away (see AuthChangeFeed); each such change, and each change of
 * trust, empties it. Only tokens found valid are kept: a refusal is checked
 * again next time.
 */
export class AuthUserCache {
  private readonly entries = new Map<
    string,
    VerifiedToken & {cachedUntil: number}
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

  /** The token and its user, if found valid within the last ttlMs. */
  get(token: string): VerifiedToken | undefined {
    if (!this.enabled) return undefined;
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.cachedUntil <= this.now()) {
      this.entries.delete(token);
      return undefined;
    }
    return entry;
  }

  set(token: string, claims: TokenClaims, user: CurrentUser): void {
    if (!this.enabled) return;
    if (this.entries.size >= this.maxEntries) {
      // Insertion order: the first key is the oldest entry.
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(token, {
      claims,
      user,
      cachedUntil: this.now() + this.ttlMs,
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
