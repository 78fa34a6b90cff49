import {expect} from '@loopback/testlab';
import {
  AddressInfo,
  createConnection,
  createServer,
  Server,
  Socket,
} from 'node:net';
import {AuthChangeFeed} from '../../auth/auth-change-feed';
import {AuthChangeFeedObserver} from '../../auth/auth-change-feed.observer';
import {AuthUserCache} from '../../auth/user-cache';
import {loadConfig} from '../../config';
import {LogCapture} from '../fixtures/log-capture';
import {eventually} from '../fixtures/test-consumer';
import {sql, TEST_DATABASE_URL} from '../fixtures/test-database';

/**
 * A PostgreSQL address that accepts connections and says nothing (a
 * stalled server, a proxy whose backend is gone) until `forward()`, from
 * when on new connections reach the real server.
 */
async function givenSilentServer() {
  const target = new URL(TEST_DATABASE_URL);
  const sockets = new Set<Socket>();
  let forwarding = false;
  const server: Server = createServer(client => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (!forwarding) return;
    const upstream = createConnection(
      Number(target.port || 5432),
      target.hostname,
    );
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(TEST_DATABASE_URL);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    forward: () => (forwarding = true),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise(resolve => server.close(resolve));
    },
  };
}

/** Settles with `promise`, or rejects once `ms` have passed. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms),
    ),
  ]);
}

/**
 * Issue 17's auth change feed is an optimisation of the API: a database
 * session that does not answer must neither hold up the API's start nor
 * keep the cache off for good once the database answers again.
 */
describe('auth change feed with a database that does not answer', () => {
  let silent: Awaited<ReturnType<typeof givenSilentServer>>;
  let logs: LogCapture;

  beforeEach(async () => {
    silent = await givenSilentServer();
    logs = new LogCapture();
  });
  afterEach(() => silent.close());

  it("does not hold up the API's start behind a transaction pooler", async () => {
    const cache = new AuthUserCache(5000);
    const observer = new AuthChangeFeedObserver(
      {
        ...loadConfig(),
        databasePoolMode: 'transaction',
        databaseUrl: TEST_DATABASE_URL,
        databaseDirectUrl: silent.url,
      },
      cache,
      logs.logger,
    );
    try {
      await within(observer.start(), 2000, 'starting the feed');
      expect(cache.enabled).to.be.false();
    } finally {
      await within(observer.stop(), 2000, 'stopping the feed');
    }
  });

  it('gives up a connection attempt that gets no answer, and listens once the database answers', async () => {
    const cache = new AuthUserCache(5000);
    const feed = new AuthChangeFeed(silent.url, cache, logs.logger, {
      minBackoffMs: 50,
      maxBackoffMs: 100,
      connectTimeoutMs: 300,
    });
    try {
      await within(feed.start(), 2000, 'starting the feed');
      expect(cache.enabled).to.be.false();
      silent.forward();
      await eventually(() => cache.enabled || undefined, 5000, 'the feed');
      // It hears changes: a deactivation empties the cache.
      cache.set('a-token', {} as never, {} as never, cache.generation);
      await sql(`UPDATE app_user SET active = active WHERE false`);
      await eventually(() => cache.size === 0 || undefined, 2000);
    } finally {
      await within(feed.stop(), 2000, 'stopping the feed');
    }
  });
});
