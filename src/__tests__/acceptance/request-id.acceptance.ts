import {expect} from '@loopback/testlab';
import {connect} from 'node:net';
import {MAX_REQUEST_ID_LENGTH} from '../../logging/request-context';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {closeVhostConnections, resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  TestConsumer,
} from '../fixtures/test-consumer';
import {givenCatalog, sql, truncateAll} from '../fixtures/test-database';
import {
  givenRunningApp,
  givenSchedulerBody,
  TestApp,
} from '../fixtures/test-app';

const UUID =
  /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Issue 16, item 2: one id per request, in the header, the logs and the error body. */
describe('request ids', () => {
  let given: TestApp;
  let consumer: TestConsumer;
  let operator: AuthedClient;

  before(async () => {
    given = await givenRunningApp();
    await resetBroker();
    consumer = await givenConsumer({
      workersDir: givenWorkersDir({'sample-worker': '#!/bin/sh\necho ran\n'}),
    });
  });
  after(async () => {
    await consumer.stop();
    await given.app.stop();
  });
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    operator = asUser(given.client, (await givenTeam(given.app)).operator);
    given.logs.clear();
    // Ids restart with each truncation: older task records would match.
    consumer.logs.clear();
  });

  const recordsOf = (requestId: string) =>
    given.logs.records.filter(record => record.request_id === requestId);

  it('takes a sane X-Request-Id, echoes it and writes it on every record of the request', async () => {
    const id = 'trace-4bf92f3577b34da6:a3ce929d0e0e4736';
    const res = await operator
      .get('/api/schedulers')
      .set('X-Request-Id', id)
      .expect(200);
    expect(res.get('X-Request-Id')).to.equal(id);
    expect(recordsOf(id).map(record => record.msg)).to.containDeep([
      'Incoming request',
      'Request completed',
    ]);
    // No record of that request lacks it.
    const ofRequest = given.logs.records.filter(
      record => record.url === '/api/schedulers',
    );
    expect(ofRequest.length).to.be.aboveOrEqual(2);
    expect(ofRequest.every(record => record.request_id === id)).to.be.true();
  });

  it('generates a UUID when none is given, also for unknown routes and the landing page', async () => {
    for (const path of ['/api/schedulers', '/api/no-such-route', '/']) {
      const res = await operator.get(path);
      const id = res.get('X-Request-Id');
      expect({path, id}).to.match({path, id: UUID});
      expect(recordsOf(id ?? '').length).to.be.aboveOrEqual(2);
    }
  });

  for (const [what, value] of [
    ['longer than 128 characters', 'a'.repeat(MAX_REQUEST_ID_LENGTH + 1)],
    ['with a space', 'two words'],
    ['with a quote and angle brackets', '"><script>'],
    ['with a semicolon', 'a;DROP TABLE scheduler'],
    ['starting with punctuation', '-leading-dash'],
    ['non-ASCII', 'id-é'],
  ] as const) {
    it(`replaces an X-Request-Id ${what} by a new one and answers as usual`, async () => {
      const res = await operator
        .get('/api/schedulers')
        .set('X-Request-Id', value)
        .expect(200);
      expect(res.get('X-Request-Id')).to.match(UUID);
      expect(JSON.stringify(given.logs.records)).to.not.containEql(value);
    });
  }

  it('gives a request the HTTP parser refuses (a 1 MB X-Request-Id, a control character) an id too', async () => {
    const {hostname, port} = new URL(given.app.restServer.url!);
    for (const [value, status] of [
      ['x'.repeat(1024 * 1024), 431],
      ['abc\u0001def', 400],
    ] as const) {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () =>
          socket.end(
            `GET /api/ping HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${value}\r\n\r\n`,
          ),
        );
        const chunks: Buffer[] = [];
        socket.on('data', chunk => chunks.push(chunk));
        socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
        // The server answers and closes before the megabyte is sent: a reset
        // after its answer is expected.
        socket.on('error', error =>
          chunks.length > 0 ? socket.destroy() : reject(error),
        );
      });
      const [head, body] = raw.split('\r\n\r\n');
      expect(head).to.startWith(`HTTP/1.1 ${status} `);
      const id = /^X-Request-Id: (.*)$/im.exec(head)?.[1];
      expect(id).to.match(UUID);
      expect(JSON.parse(body).error).to.containDeep({
        statusCode: status,
        request_id: id,
      });
      expect(
        given.logs.find('Malformed HTTP request refused', {request_id: id}),
      ).to.have.length(1);
    }
  });

  it('accepts exactly 128 characters', async () => {
    const id = 'b'.repeat(MAX_REQUEST_ID_LENGTH);
    const res = await operator
      .get('/api/ping')
      .set('X-Request-Id', id)
      .expect(200);
    expect(res.get('X-Request-Id')).to.equal(id);
  });

  it('puts the id in the error body beside the uniform fields, and in the failure log', async () => {
    const res = await operator
      .get('/api/schedulers/987654')
      .set('X-Request-Id', 'missing-scheduler-1')
      .expect(404);
    expect(res.body.error).to.containDeep({
      statusCode: 404,
      name: 'NotFoundError',
      request_id: 'missing-scheduler-1',
    });
    expect(
      given.logs.find('Request failed', {request_id: 'missing-scheduler-1'}),
    ).to.have.length(1);
    const unauthenticated = await given.client
      .post('/api/schedulers')
      .send({})
      .expect(401);
    expect(unauthenticated.body.error.request_id).to.equal(
      unauthenticated.get('X-Request-Id'),
    );
  });

  it('records the id of the request in the audit event it caused', async () => {
    const res = await operator
      .post('/api/schedulers')
      .set('X-Request-Id', 'create-for-audit')
      .send(givenSchedulerBody())
      .expect(201);
    const rows = await sql<{request_id: string}>(
      `SELECT request_id FROM audit_event WHERE entity = 'scheduler' AND entity_id = $1`,
      [String(res.body.id)],
    );
    expect(rows.map(row => row.request_id)).to.deepEqual(['create-for-audit']);
  });

  it('carries the id of a run now to the task log lines of the consumer that runs it', async () => {
    const created = await operator
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({report_id: undefined, worker_id: 1, params: {}}),
      )
      .expect(201);
    await operator
      .post(`/api/schedulers/${created.body.id}/run`)
      .set('X-Request-Id', 'run-now-42')
      .send({})
      .expect(202);
    const succeeded = await eventually(async () => {
      const found = consumer.logs.find('Task succeeded', {
        scheduler_id: created.body.id,
      });
      return found.length > 0 ? found : undefined;
    }, 15_000);
    expect(succeeded[0].request_id).to.equal('run-now-42');
    expect(
      consumer.logs.find('Task started', {scheduler_id: created.body.id})[0]
        .request_id,
    ).to.equal('run-now-42');
  });

  it('carries the id of a re-drive to the task log lines of the consumer that runs it', async () => {
    const created = await operator
      .post('/api/schedulers')
      .send(
        givenSchedulerBody({report_id: undefined, worker_id: 1, params: {}}),
      )
      .expect(201);
    const [failed] = await sql<{id: number}>(
      `INSERT INTO failed_task (scheduler_id, type, task_id, params_scheduler, payload, failed_reason, failed_at)
       VALUES ($1, 'worker', 1, '{}', '{}', 'worker exited with code 3', now())
       RETURNING id`,
      [created.body.id],
    );
    await operator
      .post(`/api/failed-tasks/${failed.id}/redrive`)
      .set('X-Request-Id', 'redrive-7')
      .send({})
      .expect(202);
    const started = await eventually(async () => {
      const found = consumer.logs.find('Task started', {
        scheduler_id: created.body.id,
      });
      return found.length > 0 ? found : undefined;
    }, 15_000);
    expect(started[0].request_id).to.equal('redrive-7');
  });

  it("does not lend the id of the request that opened the broker connection to that connection's later records", async () => {
    // A fresh API process: its broker connection opens on the first run now.
    const fresh = await givenRunningApp();
    try {
      const admin = asUser(fresh.client, (await givenTeam(fresh.app)).operator);
      const created = await admin
        .post('/api/schedulers')
        .send(
          givenSchedulerBody({report_id: undefined, worker_id: 1, params: {}}),
        )
        .expect(201);
      await admin
        .post(`/api/schedulers/${created.body.id}/run`)
        .set('X-Request-Id', 'opens-the-broker')
        .send({})
        .expect(202);
      await closeVhostConnections();
      await eventually(async () => {
        const connected = fresh.logs.find('Broker connected', {
          context: 'broker',
        });
        return connected.length >= 2 ? connected : undefined;
      }, 15_000);
      const brokerRecords = fresh.logs.records.filter(
        record => record.context === 'broker',
      );
      expect(brokerRecords.map(record => record.msg)).to.containEql(
        'Broker unavailable, reconnecting',
      );
      expect(brokerRecords.filter(record => 'request_id' in record)).to.eql([]);
    } finally {
      await fresh.app.stop();
    }
  });
});
