import {expect} from '@loopback/testlab';
import {connect, createServer, Server, Socket} from 'node:net';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {drainQueue, resetBroker, TEST_AMQP_URL} from '../fixtures/test-broker';
import {TASK_QUEUE} from '../../queue/topology';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {eventually} from '../fixtures/test-consumer';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';

/** An operator of `app` and one scheduler of theirs to run. */
async function givenOperatorScheduler(
  app: TestApp,
): Promise<{operator: AuthedClient; scheduler: {id: number}}> {
  const team = await givenTeam(app.app);
  const operator = asUser(app.client, team.operator);
  const {body: scheduler} = await operator
    .post('/api/schedulers')
    .send(givenSchedulerBody())
    .expect(201);
  return {operator, scheduler};
}

describe('the API opens the broker on first use', () => {
  let given: TestApp;

  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    // A new app: its broker connection is not open yet.
    given = await givenRunningApp();
  });
  afterEach(() => given.app.stop());

  it('lets requests that come while it opens wait for it, not answer 503 (review: 5 of 6 concurrent backfills did)', async () => {
    const {operator, scheduler} = await givenOperatorScheduler(given);
    const answers = await Promise.all(
      Array.from({length: 8}, () =>
        operator.post(`/api/schedulers/${scheduler.id}/run`).send({}),
      ),
    );
    expect(answers.map(res => res.status)).to.deepEqual(Array(8).fill(202));
    expect(answers.map(res => res.body.status)).to.deepEqual(
      Array(8).fill('published'),
    );
    expect(await drainQueue(TASK_QUEUE)).to.have.length(8);
  });

  describe('a broker that accepts connections and never answers', () => {
    let blackHole: Server;
    const sockets: Socket[] = [];
    let app: TestApp;

    before(async () => {
      blackHole = createServer(socket => sockets.push(socket));
      await new Promise<void>(resolve =>
        blackHole.listen(0, '127.0.0.1', resolve),
      );
    });
    after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise(resolve => blackHole.close(resolve));
    });
    afterEach(() => app?.app.stop());

    it('answers 503 to every request waiting for it once the attempt times out, and later ones too (review: they hung until the socket died)', async () => {
      const {port} = blackHole.address() as {port: number};
      app = await givenRunningApp({
        amqpUrl: `amqp://guest:guest@127.0.0.1:${port}`,
        amqpConnectTimeoutMs: 300,
      });
      const {operator, scheduler} = await givenOperatorScheduler(app);
      const run = () =>
        operator
          .post(`/api/schedulers/${scheduler.id}/run`)
          .send({})
          .timeout(5000);
      const answers = await Promise.all(Array.from({length: 4}, run));
      expect(answers.map(res => res.status)).to.deepEqual(Array(4).fill(503));
      expect(answers[0].body.error).to.containDeep({statusCode: 503});
      expect((await run()).status).to.equal(503);
      // Nothing was stored for the runs it could not send.
      expect(
        await sql(
          `SELECT count(*)::int AS n FROM scheduler_execution WHERE scheduler_id = $1`,
          [scheduler.id],
        ),
      ).to.deepEqual([{n: 0}]);
    });
  });

  it('ends a run now the broker leaves unconfirmed at AMQP_CONFIRM_TIMEOUT_MS as pending, and publishes the next on a fresh connection', async () => {
    const broker = new URL(TEST_AMQP_URL);
    const proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    const port = await proxy.start();
    const app = await givenRunningApp({
      amqpUrl: viaPort(TEST_AMQP_URL, port),
      amqpConfirmTimeoutMs: 500,
    });
    try {
      const {operator, scheduler} = await givenOperatorScheduler(app);
      // Within 5 s: the default deadline (60 s) would outlast the timeout.
      const run = async () =>
        (
          await operator
            .post(`/api/schedulers/${scheduler.id}/run`)
            .send({})
            .timeout(5000)
            .expect(202)
        ).body.status;
      expect(await run()).to.equal('published');
      // The broker stops reading the API's connection (flow control).
      proxy.stallOpen();
      expect(await run()).to.equal('pending');
      // That connection was dropped; a later run goes out on a fresh one
      // (while it opens, runs answer 503 and store nothing).
      await eventually(
        async () => (await run().catch(() => 'refused')) === 'published',
        10_000,
        'a run published on a fresh connection',
      );
      expect(proxy.accepted).to.be.aboveOrEqual(2);
    } finally {
      await app.app.stop();
      await proxy.close();
    }
  });

  describe('a broker slow to answer', () => {
    let proxy: Server;
    const sockets: Socket[] = [];
    let app: TestApp;

    before(async () => {
      // Passes connections on to the real broker after 800 ms.
      const broker = new URL(TEST_AMQP_URL);
      proxy = createServer(client => {
        sockets.push(client);
        client.pause();
        setTimeout(() => {
          const upstream = connect(
            Number(broker.port || 5672),
            broker.hostname,
          );
          sockets.push(upstream);
          client.pipe(upstream).pipe(client);
          client.resume();
          upstream.on('error', () => client.destroy());
          client.on('error', () => upstream.destroy());
        }, 800);
      });
      await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise(resolve => proxy.close(resolve));
    });
    afterEach(() => app?.app.stop());

    it('answers 404 to a run whose scheduler was deleted while it waited (review: a 422 about a missing record)', async () => {
      const url = new URL(TEST_AMQP_URL);
      url.host = `127.0.0.1:${(proxy.address() as {port: number}).port}`;
      app = await givenRunningApp({amqpUrl: url.toString()});
      const team = await givenTeam(app.app);
      const operator = asUser(app.client, team.operator);
      const created = async () =>
        (
          await operator
            .post('/api/schedulers')
            .send(givenSchedulerBody())
            .expect(201)
        ).body.id as number;
      const [kept, deleted] = [await created(), await created()];
      const first = operator.post(`/api/schedulers/${kept}/run`).send({});
      const waiting = operator
        .post(`/api/schedulers/${deleted}/run`)
        .send({})
        .then(res => res);
      await new Promise(resolve => setTimeout(resolve, 300));
      await operator.delete(`/api/schedulers/${deleted}`).expect(204);
      expect((await first).status).to.equal(202);
      const res = await waiting;
      expect(res.status).to.equal(404);
      expect(res.body.error.message).to.equal(
        `Entity not found: Scheduler with id ${deleted}`,
      );
    });
  });
});
