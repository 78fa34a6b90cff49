import {expect} from '@loopback/testlab';
import {once} from 'node:events';
import {
  createServer,
  request,
  Server,
  ServerResponse,
  IncomingMessage,
} from 'node:http';
import type {AddressInfo} from 'node:net';
import {
  CLIENT_CLOSED_REQUEST,
  ClientGoneError,
  clientGoneSignal,
} from '../../process/client-gone';
import {toHttpError} from '../../middleware/error-mapping';

/** A server whose handler gets each request's response; the test answers it. */
async function givenServer() {
  const responses: ServerResponse[] = [];
  const arrived: Array<() => void> = [];
  const server: Server = createServer(
    (_req: IncomingMessage, res: ServerResponse) => {
      responses.push(res);
      arrived.shift()?.();
    },
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const {port} = server.address() as AddressInfo;
  /** Sends a request; resolves with the server's response object once it arrived. */
  const send = async () => {
    const here = new Promise<void>(resolve => arrived.push(resolve));
    const req = request({port, host: '127.0.0.1', method: 'GET'});
    req.on('error', () => undefined);
    req.end();
    await here;
    return {req, res: responses[responses.length - 1]};
  };
  return {send, close: () => server.close()};
}

describe('clientGoneSignal', () => {
  let server: Awaited<ReturnType<typeof givenServer>>;
  beforeEach(async () => (server = await givenServer()));
  afterEach(() => server.close());

  it('aborts with a ClientGoneError when the client closes before the answer', async () => {
    const {req, res} = await server.send();
    const signal = clientGoneSignal(res);
    expect(signal.aborted).to.be.false();
    req.destroy();
    await once(res, 'close');
    expect(signal.aborted).to.be.true();
    expect(signal.reason).to.be.instanceOf(ClientGoneError);
    expect(signal.reason.statusCode).to.equal(CLIENT_CLOSED_REQUEST);
  });

  it('never aborts once the answer was written', async () => {
    const {req, res} = await server.send();
    const signal = clientGoneSignal(res);
    const answered = once(req, 'response');
    const closed = once(res, 'close');
    res.end('done');
    const [incoming] = await answered;
    incoming.resume();
    await closed;
    expect(signal.aborted).to.be.false();
  });

  it('is aborted at once for a client that left before anyone asked', async () => {
    const {req, res} = await server.send();
    req.destroy();
    await once(res, 'close');
    expect(clientGoneSignal(res).aborted).to.be.true();
  });

  it('maps to a 499 named for what happened (logged, never an error alert)', () => {
    expect(toHttpError(new ClientGoneError())).to.deepEqual({
      statusCode: 499,
      name: 'ClientClosedRequestError',
      message: 'the client closed the connection before the answer was ready',
    });
  });
});
