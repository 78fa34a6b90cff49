import {expect} from '@loopback/testlab';
import {
  ACCOUNT_FREE_FAILURES,
  KnownLocks,
  LoginThrottle,
  lockSeconds,
  MAX_LOCK_SECONDS,
  PRUNE_EVERY_MS,
  READ_LOCK_REMEMBERED_MS,
  throttleKeys,
} from '../../auth/login-throttle';

describe('login throttle rules', () => {
  it('doubles the lock from the 5th failure up to 15 minutes', () => {
    expect(
      [3, 4, 5, 6, 7, 8, 20, 100].map(n =>
        lockSeconds(n, ACCOUNT_FREE_FAILURES),
      ),
    ).to.deepEqual([0, 0, 1, 2, 4, 8, MAX_LOCK_SECONDS, MAX_LOCK_SECONDS]);
  });

  it('keys an account by its lower-cased e-mail, bounded in length', () => {
    const keys = throttleKeys(' Admin@Example.COM ', '::1');
    expect(keys).to.deepEqual({
      account: 'account:admin@example.com',
      address: 'address:::1',
    });
    expect(
      throttleKeys('x'.repeat(5000), 'y'.repeat(500)).account.length,
    ).to.be.below(400);
  });

  it('asks for a prune of forgotten rows at most once per interval', () => {
    const locks = new KnownLocks();
    expect(locks.prunePending(PRUNE_EVERY_MS)).to.be.true();
    expect(locks.prunePending(PRUNE_EVERY_MS + 1000)).to.be.false();
    expect(locks.prunePending(2 * PRUNE_EVERY_MS)).to.be.true();
  });

  it('keeps a known lock only until it ends, and never grows past its bound', () => {
    const locks = new KnownLocks(2);
    locks.remember('a', 2000, 0);
    locks.remember('b', 5000, 0);
    expect(locks.lockedUntil('a', 1000)).to.equal(2000);
    expect(locks.lockedUntil('a', 2000)).to.be.undefined();
    // Full: an expired entry makes room, a live table is left alone.
    locks.remember('c', 9000, 3000);
    locks.remember('d', 9000, 3000);
    expect(locks.lockedUntil('c', 3000)).to.equal(9000);
    expect(locks.lockedUntil('d', 3000)).to.be.undefined();
  });

  it('remembers a lock read from the table for two seconds at most (review: a replica refused a user for 15 minutes after the lock ended)', async () => {
    let now = new Date('2026-11-28T10:00:00Z');
    let rows: object[] = [
      {
        key: 'account:a@example.com',
        failures: 14,
        locked_until: new Date(now.getTime() + 899_000),
      },
    ];
    const throttle = new LoginThrottle(
      async () => rows,
      () => now,
    );
    const keys = throttleKeys('a@example.com', '192.0.2.1');
    expect(await throttle.retryAfterSeconds(keys)).to.equal(899);
    // The attempt whose admission set it was right: the row is gone.
    rows = [];
    now = new Date(now.getTime() + READ_LOCK_REMEMBERED_MS / 2);
    expect(await throttle.retryAfterSeconds(keys)).to.be.above(0);
    now = new Date(now.getTime() + READ_LOCK_REMEMBERED_MS);
    expect(await throttle.retryAfterSeconds(keys)).to.equal(0);
  });
});
