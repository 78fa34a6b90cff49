import {expect} from '@loopback/testlab';
import {createPool, IDLE_CONNECTION_MS} from '../../database/pg-pool';
import {createLogger} from '../../logging/logger';

describe('createPool', () => {
  const logger = createLogger({level: 'error', service: 'test'});

  it('keeps an idle connection across the minute tick, below a load balancer idle cut, with TCP keepalives', async () => {
    // No query: the pool opens no connection, only its settings are read.
    const pool = createPool('postgres://nobody@127.0.0.1:1/none', logger);
    try {
      const options = (
        pool as unknown as {
          options: {idleTimeoutMillis: number; keepAlive: boolean};
        }
      ).options;
      expect(options.idleTimeoutMillis).to.equal(IDLE_CONNECTION_MS);
      expect(options.keepAlive).to.be.true();
      // Longer than a minute between two ticks, shorter than the 4 minutes
      // after which some load balancers drop an idle connection silently.
      expect(IDLE_CONNECTION_MS).to.be.above(60_000);
      expect(IDLE_CONNECTION_MS).to.be.below(4 * 60_000);
    } finally {
      await pool.end();
    }
  });
});
