import {expect} from '@loopback/testlab';
import {
  MAX_BELIEVABLE_RETRY_COUNT,
  retryCountOf,
} from '../../consumer/retry-count';

describe('retryCountOf', () => {
  it('reads our header, else the first x-death count, else 0', () => {
    expect(retryCountOf({'x-retry-count': 2})).to.equal(2);
    expect(retryCountOf({'x-death': [{count: 3}]})).to.equal(3);
    expect(retryCountOf({})).to.equal(0);
    expect(retryCountOf(undefined)).to.equal(0);
  });

  it('does not believe counts a ledger integer cannot hold or no retry policy allows', () => {
    // Found by a hostile review: 3e9 reached the ledger's integer column,
    // the write failed, and the message was requeued for ever ahead of all others.
    expect(retryCountOf({'x-retry-count': 3e9})).to.equal(0);
    expect(
      retryCountOf({'x-retry-count': MAX_BELIEVABLE_RETRY_COUNT + 1}),
    ).to.equal(0);
    expect(
      retryCountOf({'x-retry-count': 3e9, 'x-death': [{count: 1}]}),
    ).to.equal(1);
    expect(retryCountOf({'x-death': [{count: 2 ** 40}]})).to.equal(0);
    expect(retryCountOf({'x-retry-count': -1})).to.equal(0);
    expect(retryCountOf({'x-retry-count': 1.5})).to.equal(0);
  });
});
