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
 * again next time. A lookup takes `generation` before it reads the user and
 * hands it to `set`: if the cache was emptied meanwhile, what it read may
 * predate the change that emptied it, and it is not kept.
 */
export class AuthUserCache {
  private readonly entries = new Map<
    string,
    VerifiedToken & {cachedUntil: number}
  >();
  private trusted = false;
  private emptiedCount = 0;

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

  /** Changes whenever the cache is emptied: taken before a lookup, for `set`. */
  get generation(): number {
    return this.emptiedCount;
  }

  /**
   * Keeps what a lookup found, unless the cache was emptied since that
   * lookup took `generation` (before it read the user).
   */
  set(
    token: string,
    claims: TokenClaims,
    user: CurrentUser,
    generation: number,
  ): void {
    if (!this.enabled || generation !== this.emptiedCount) return;
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
    this.emptiedCount++;
    this.entries.clear();
  }

  /** Whether changes reach the cache now; either way it starts empty. */
  trust(trusted: boolean): void {
    this.trusted = trusted;
    this.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
