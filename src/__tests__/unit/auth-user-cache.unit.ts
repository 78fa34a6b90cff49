import {expect} from '@loopback/testlab';
import {securityId} from '@loopback/security';
import {authFeedUrl} from '../../auth/auth-change-feed.observer';
import type {CurrentUser} from '../../auth/current-user';
import type {TokenClaims} from '../../auth/token.service';
import {AuthUserCache} from '../../auth/user-cache';

describe('AuthUserCache', () => {
  let now: number;
  const claims = (userId: number): TokenClaims => ({
    userId,
    issuedAt: new Date(1_700_000_000_000),
    expiresAt: new Date(1_700_003_600_000),
    tokenId: `t-${userId}`,
  });
  const user = (id: number): CurrentUser => ({
    [securityId]: String(id),
    id,
    email: `u${id}@example.com`,
    role: 'viewer',
  });
  const token = (id: number) => `header.payload-${id}.signature`;
  const trusted = (ttlMs = 5000, max?: number) => {
    const cache = new AuthUserCache(ttlMs, max, () => now);
    cache.trust(true);
    return cache;
  };
  const put = (cache: AuthUserCache, id: number) =>
    cache.set(token(id), claims(id), user(id), cache.generation);

  beforeEach(() => (now = 1_000_000));

  it('answers for the very token it verified, with its claims and user', () => {
    const cache = trusted();
    put(cache, 1);
    expect(cache.get(token(1))).to.containDeep({
      claims: claims(1),
      user: {id: 1},
    });
    expect(cache.get(`${token(1)}x`)).to.be.undefined();
    expect(cache.get(token(2))).to.be.undefined();
  });

  it('forgets an entry once ttlMs has passed', () => {
    const cache = trusted(5000);
    put(cache, 1);
    now += 4999;
    expect(cache.get(token(1))).to.not.be.undefined();
    now += 1;
    expect(cache.get(token(1))).to.be.undefined();
    expect(cache.size).to.equal(0);
  });

  it('keeps nothing while untrusted or with a TTL of 0, and starts empty on each change of trust', () => {
    const off = new AuthUserCache(5000, undefined, () => now);
    put(off, 1);
    expect(off.get(token(1))).to.be.undefined();
    const zero = trusted(0);
    put(zero, 1);
    expect(zero.get(token(1))).to.be.undefined();
    const cache = trusted();
    put(cache, 1);
    cache.trust(false);
    expect(cache.get(token(1))).to.be.undefined();
    cache.trust(true);
    expect(cache.get(token(1))).to.be.undefined();
  });

  it('drops the oldest entry past its size bound', () => {
    const cache = trusted(5000, 2);
    put(cache, 1);
    put(cache, 2);
    put(cache, 3);
    expect(cache.size).to.equal(2);
    expect(cache.get(token(1))).to.be.undefined();
    expect(cache.get(token(3))?.user.id).to.equal(3);
  });

  it('keeps nothing a lookup found if the cache was emptied while it ran', () => {
    const cache = trusted();
    const before = cache.generation;
    cache.clear();
    cache.set(token(1), claims(1), user(1), before);
    expect(cache.get(token(1))).to.be.undefined();
    const untrusted = cache.generation;
    cache.trust(false);
    cache.trust(true);
    cache.set(token(1), claims(1), user(1), untrusted);
    expect(cache.get(token(1))).to.be.undefined();
    put(cache, 1);
    expect(cache.get(token(1))?.user.id).to.equal(1);
  });

  it('empties on clear()', () => {
    const cache = trusted();
    put(cache, 1);
    cache.clear();
    expect(cache.get(token(1))).to.be.undefined();
  });
});

describe('authFeedUrl', () => {
  const direct = 'postgres://db:5432/app';
  const pooler = 'postgres://pgbouncer:6432/app';

  it('listens on DATABASE_URL of a session pool', () => {
    expect(
      authFeedUrl({
        databasePoolMode: 'session',
        databaseUrl: direct,
        databaseDirectUrl: direct,
      }),
    ).to.equal(direct);
  });

  it('listens on DATABASE_DIRECT_URL behind a transaction pooler, and not at all without one', () => {
    expect(
      authFeedUrl({
        databasePoolMode: 'transaction',
        databaseUrl: pooler,
        databaseDirectUrl: direct,
      }),
    ).to.equal(direct);
    expect(
      authFeedUrl({
        databasePoolMode: 'transaction',
        databaseUrl: pooler,
        databaseDirectUrl: pooler,
      }),
    ).to.be.undefined();
  });
});
