import {expect} from '@loopback/testlab';
import {Client} from 'pg';
import {TcpProxy} from '../fixtures/tcp-proxy';
import {TEST_DATABASE_URL} from '../fixtures/test-database';

/** The chaos suite's proxy, against the real PostgreSQL. */
describe('TcpProxy (chaos fixture)', () => {
  let proxy: TcpProxy;
  const target = new URL(TEST_DATABASE_URL);

  beforeEach(async () => {
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
  });
  afterEach(() => proxy.close());

  const viaProxy = () => {
    const url = new URL(TEST_DATABASE_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const client = new Client({
      connectionString: url.toString(),
      connectionTimeoutMillis: 2000,
    });
    client.on('error', () => undefined);
    return client;
  };

  it('forwards queries', async () => {
    const client = viaProxy();
    await client.connect();
    const {rows} = await client.query('SELECT 41 + 1 AS answer');
    expect(rows[0].answer).to.equal(42);
    await client.end();
  });

  it('cut() breaks open connections and refuses new ones until restore()', async () => {
    const client = viaProxy();
    await client.connect();
    proxy.cut();
    await expect(client.query('SELECT 1')).to.be.rejected();
    await expect(viaProxy().connect()).to.be.rejected();
    proxy.restore();
    const again = viaProxy();
    await again.connect();
    expect((await again.query('SELECT 1 AS one')).rows[0].one).to.equal(1);
    await again.end();
  });

  it('stall() holds bytes without losing them; restore() lets them through', async () => {
    const client = viaProxy();
    await client.connect();
    proxy.stall();
    let answered = false;
    const pending = client.query('SELECT 7 AS seven').then(result => {
      answered = true;
      return result;
    });
    await new Promise(resolve => setTimeout(resolve, 300));
    expect(answered).to.be.false();
    proxy.restore();
    expect((await pending).rows[0].seven).to.equal(7);
    await client.end();
  });
});
