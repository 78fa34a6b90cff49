import {expect} from '@loopback/testlab';
import {Webhook} from 'standardwebhooks';
import {
  NOTHING_ALLOWED,
  parseOutboundAllow,
} from '../../outbound/address-policy';
import {
  MAX_RESPONSE_BYTES,
  OutboundRefused,
  OutboundTimedOut,
  sendOutbound,
} from '../../outbound/outbound-request';
import {newSigningSecret} from '../../outbound/webhook-signature';
import {resetBroker} from '../fixtures/test-broker';
import {
  eventually,
  givenConsumer,
  givenWorkersDir,
  publishTask,
  TestConsumer,
} from '../fixtures/test-consumer';
import {sql, truncateAll} from '../fixtures/test-database';
import {TestReceiver} from '../fixtures/test-receiver';

const CREDENTIAL = 'Bearer s3cr3t-credential-value';
const EXECUTION_KEY = 'cron-2026-11-24-21-00';

describe('HTTP tasks through the SSRF guard (issue 27)', () => {
  let allowed: TestReceiver;
  let refused: TestReceiver;
  let consumer: TestConsumer | undefined;
  const workersDir = givenWorkersDir({});

  before(async () => {
    allowed = await TestReceiver.listen('127.0.0.2');
    refused = await TestReceiver.listen('127.0.0.1');
  });
  after(async () => {
    await allowed.close();
    await refused.close();
  });
  beforeEach(async () => {
    allowed.calls.length = 0;
    refused.calls.length = 0;
    allowed.answer = (_call, response) => response.end('ok');
    refused.answer = (_call, response) => response.end('reached');
    await truncateAll();
    await resetBroker();
  });
  afterEach(async () => {
    await consumer?.stop(100);
    consumer = undefined;
  });

  async function givenHttpRun(target: {
    url: string;
    body?: string | null;
    timeout_ms?: number;
    previous_signing_secret?: string;
  }) {
    const secret = newSigningSecret();
    const [row] = await sql<{id: number}>(
      `INSERT INTO http_target
         (name, url, method, headers, secret_headers, secret_header_names, body,
          timeout_ms, signing_secret, previous_signing_secret, previous_secret_expires_at)
       VALUES ('t', $1, 'POST', '{"X-Team": "ops"}', $2, '["Authorization"]', $3,
               $4, $5, $6, now() + interval '1 hour')
       RETURNING id`,
      [
        target.url,
        JSON.stringify({Authorization: CREDENTIAL}),
        target.body === undefined ? '{"day": "{{today}}"}' : target.body,
        target.timeout_ms ?? 2000,
        secret,
        target.previous_signing_secret ?? null,
      ],
    );
    const [scheduler] = await sql<{id: number}>(
      `INSERT INTO scheduler (description, schedule, http_target_id)
       VALUES ('call', '* * * * *', $1) RETURNING id`,
      [row.id],
    );
    const [execution] = await sql<{id: string}>(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, container_id, status, published_at)
       VALUES ($1, $2, 'test', 'published', now()) RETURNING id`,
      [scheduler.id, EXECUTION_KEY],
    );
    const executionId = Number(execution.id);
    await publishTask(
      {
        type: 'http',
        id: row.id,
        scheduler_id: scheduler.id,
        params_scheduler: '{}',
      },
      {'x-execution-id': executionId, 'x-execution-key': EXECUTION_KEY},
    );
    return {secret, executionId, schedulerId: scheduler.id};
  }

  const ledger = async (executionId: number) =>
    (
      await sql<Record<string, unknown>>(
        `SELECT * FROM scheduler_execution WHERE id = $1`,
        [executionId],
      )
    )[0];

  const ended = (executionId: number) =>
    eventually(
      async () => {
        const row = await ledger(executionId);
        return ['succeeded', 'failed'].includes(row.status as string)
          ? row
          : undefined;
      },
      15_000,
      'the run to end',
    );

  it('calls the target signed, and records status, duration and body in the ledger', async () => {
    consumer = await givenConsumer({
      workersDir,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
    });
    allowed.answer = (_call, response) => response.end('{"accepted":true}');
    const {secret, executionId, schedulerId} = await givenHttpRun({
      url: allowed.url(),
    });
    const row = await ended(executionId);
    expect(row).to.containDeep({
      status: 'succeeded',
      http_status: 200,
      response_body: '{"accepted":true}',
    });
    expect(row.duration_ms).to.be.a.Number();
    expect(allowed.calls).to.have.length(1);
    const [call] = allowed.calls;
    const today = new Date().toISOString().slice(0, 10);
    expect(call.body).to.equal(`{"day": "${today}"}`);
    expect(call.headers.authorization).to.equal(CREDENTIAL);
    expect(call.headers['x-team']).to.equal('ops');
    expect(call.headers['webhook-id']).to.equal(
      `run_${schedulerId}_${EXECUTION_KEY}`,
    );
    expect(new Webhook(secret).verify(call.body, call.headers as never)).to.eql(
      {day: today},
    );
    expect(consumer.logs.lines.join('\n')).to.not.containEql('s3cr3t');
  });

  // A receiver that echoes the request (httpbin's /anything, a debug
  // endpoint) would put the write-only credential in the ledger, which the
  // API shows to everyone who may read the run (issue 27 review).
  it('keeps a credential the target echoes back out of the ledger', async () => {
    consumer = await givenConsumer({
      workersDir,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
    });
    allowed.answer = (call, response) =>
      response.end(
        JSON.stringify({
          headers: {Authorization: call.headers.authorization},
          token: String(call.headers.authorization).split(' ')[1],
        }),
      );
    const {executionId} = await givenHttpRun({url: allowed.url()});
    const row = await ended(executionId);
    expect(row.status).to.equal('succeeded');
    expect(row.response_body).to.not.match(/s3cr3t/);
    expect(row.response_body).to.containEql('[redacted]');
  });

  it('retries a failing target with the same webhook-id on every attempt', async () => {
    consumer = await givenConsumer({
      workersDir,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
    });
    allowed.answer = (_call, response) => {
      response.statusCode = 503;
      response.end('busy');
    };
    const {secret, executionId} = await givenHttpRun({url: allowed.url()});
    const row = await ended(executionId);
    expect(row).to.containDeep({
      status: 'failed',
      attempts: 4,
      http_status: 503,
      response_body: 'busy',
    });
    expect(row.last_error).to.match(/HTTP 503 is not a success status/);
    expect(allowed.calls).to.have.length(4);
    const ids = new Set(allowed.calls.map(c => c.headers['webhook-id']));
    expect(ids.size).to.equal(1);
    for (const call of allowed.calls) {
      new Webhook(secret).verify(call.body, call.headers as never);
    }
    expect(consumer.logs.lines.join('\n')).to.not.containEql('s3cr3t');
  });

  it('sends a signature per secret during a rotation window', async () => {
    consumer = await givenConsumer({
      workersDir,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
    });
    const previous = newSigningSecret();
    const {secret, executionId} = await givenHttpRun({
      url: allowed.url(),
      previous_signing_secret: previous,
    });
    await ended(executionId);
    const [call] = allowed.calls;
    expect(
      (call.headers['webhook-signature'] as string).split(' '),
    ).to.have.length(2);
    for (const key of [secret, previous]) {
      new Webhook(key).verify(call.body, call.headers as never);
    }
  });

  it('refuses a loopback target without OUTBOUND_ALLOW and names the rule in ledger and log', async () => {
    consumer = await givenConsumer({workersDir});
    const {executionId} = await givenHttpRun({url: refused.url()});
    const row = await ended(executionId);
    expect(row.status).to.equal('failed');
    expect(row.http_status).to.be.null();
    expect(row.last_error).to.match(
      /SSRF guard: 127\.0\.0\.1 is a loopback address/,
    );
    expect(refused.calls).to.have.length(0);
    expect(
      consumer.logs.find('HTTP call refused', {rule: 'loopback'}),
    ).to.not.be.empty();
  });

  it('fails a redirect from an allowed host to a refused one without following it', async () => {
    consumer = await givenConsumer({
      workersDir,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
    });
    allowed.answer = (_call, response) => {
      response.writeHead(302, {location: refused.url('/internal')});
      response.end();
    };
    const {executionId} = await givenHttpRun({url: allowed.url()});
    const row = await ended(executionId);
    expect(row).to.containDeep({status: 'failed', http_status: 302});
    expect(row.last_error).to.match(
      /HTTP 302: redirect to 127\.0\.0\.1:\d+ not followed/,
    );
    expect(refused.calls).to.have.length(0);
  });

  it('cuts a 2 MiB answer at 1 MiB and keeps 8 KiB of it in the ledger', async () => {
    consumer = await givenConsumer({
      workersDir,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
    });
    allowed.answer = (_call, response) =>
      response.end('x'.repeat(2 * 1024 * 1024));
    const {executionId} = await givenHttpRun({url: allowed.url()});
    const row = await ended(executionId);
    expect(row).to.containDeep({
      status: 'succeeded',
      http_status: 200,
      output_truncated: true,
    });
    expect((row.response_body as string).length).to.equal(8192);
  });

  describe('sendOutbound', () => {
    const call = (url: string, timeoutMs = 2000) =>
      sendOutbound(
        {url, method: 'GET', headers: {}, timeoutMs},
        NOTHING_ALLOWED,
      );

    it('refuses every numeric and mapped form of a loopback address', async () => {
      const port = refused.port;
      for (const url of [
        `http://2130706433:${port}/`,
        `http://0x7f.0.0.1:${port}/`,
        `http://127.1:${port}/`,
        `http://[::ffff:127.0.0.1]:${port}/`,
        `http://[::1]:${port}/`,
        `http://0.0.0.0:${port}/`,
        `http://localhost:${port}/`,
      ]) {
        const error = await call(url).then(
          () => undefined,
          (e: Error) => e,
        );
        expect(error).to.be.instanceOf(OutboundRefused);
        expect((error as OutboundRefused).rule).to.match(
          /^(loopback|unspecified)$/,
        );
      }
      expect(refused.calls).to.have.length(0);
    });

    it('refuses other schemes', async () => {
      await expect(call('ftp://example.com/')).to.be.rejectedWith(
        OutboundRefused,
      );
    });

    it('cuts a never-ending answer at 1 MiB', async () => {
      allowed.answer = (_call, response) => {
        const chunk = Buffer.alloc(64 * 1024, 'y');
        const pump = () => {
          while (response.write(chunk));
          response.once('drain', pump);
        };
        response.on('error', () => undefined);
        pump();
      };
      const answer = await sendOutbound(
        {url: allowed.url(), method: 'GET', headers: {}, timeoutMs: 5000},
        parseOutboundAllow('127.0.0.2'),
      );
      expect(answer.bodyCut).to.be.true();
      expect(answer.body.length).to.equal(MAX_RESPONSE_BYTES);
    });

    it('ends an answer that trickles for ever at the timeout', async () => {
      allowed.answer = (_call, response) => {
        response.write('a');
        const timer = setInterval(() => response.write('a'), 50);
        response.on('close', () => clearInterval(timer));
      };
      const started = Date.now();
      await expect(
        sendOutbound(
          {url: allowed.url(), method: 'GET', headers: {}, timeoutMs: 500},
          parseOutboundAllow('127.0.0.2'),
        ),
      ).to.be.rejectedWith(OutboundTimedOut);
      expect(Date.now() - started).to.be.below(2000);
    });
  });
});
