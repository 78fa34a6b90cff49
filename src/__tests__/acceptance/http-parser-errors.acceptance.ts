import {expect} from '@loopback/testlab';
import {connect} from 'node:net';
import {givenRunningApp, TestApp} from '../fixtures/test-app';

/** Sends raw bytes and returns everything the server answers before closing. */
function rawRequest(url: string, bytes: string): Promise<string> {
  const {hostname, port} = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', chunk => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('error', reject);
  });
}

function parse(raw: string) {
  const [head, body] = raw.split('\r\n\r\n');
  const [statusLine, ...headers] = head.split('\r\n');
  return {
    status: Number(statusLine.split(' ')[1]),
    headers: headers.map(h => h.toLowerCase()),
    requestId: headers
      .find(h => h.toLowerCase().startsWith('x-request-id: '))
      ?.slice('x-request-id: '.length),
    body: JSON.parse(body),
  };
}

describe('requests the HTTP parser refuses (found by the API fuzzer)', () => {
  let given: TestApp;
  before(async () => {
    given = await givenRunningApp({nodeEnv: 'production'});
  });
  after(() => given.app.stop());

  it('answers a 20 kB URL with 431 in the uniform error body', async () => {
    const raw = await rawRequest(
      given.app.restServer.url!,
      `GET /api/users/${'%C3%A9'.repeat(4000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    const answer = parse(raw);
    expect(answer.status).to.equal(431);
    expect(answer.headers).to.containEql(
      'content-type: application/json; charset=utf-8',
    );
    expect(answer.body).to.eql({
      error: {
        statusCode: 431,
        name: 'RequestHeaderFieldsTooLargeError',
        message: 'Request Header Fields Too Large',
        // A new id: the request's own header could not be read.
        request_id: answer.requestId,
      },
    });
    expect(
      given.logs.find('Malformed HTTP request refused', {
        error_code: 'HPE_HEADER_OVERFLOW',
        status_code: 431,
      }),
    ).to.have.length(1);
  });

  it('answers a broken request line with 400 in the uniform error body', async () => {
    const answer = parse(
      await rawRequest(given.app.restServer.url!, 'NOT HTTP AT ALL\r\n\r\n'),
    );
    expect(answer.status).to.equal(400);
    expect(answer.body).to.eql({
      error: {
        statusCode: 400,
        name: 'BadRequestError',
        message: 'Bad Request',
        request_id: answer.requestId,
      },
    });
  });

  it('keeps serving after refusing', async () => {
    await given.client.get('/api/ping').expect(200);
  });
});
