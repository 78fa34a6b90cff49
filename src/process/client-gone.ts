import type {ServerResponse} from 'node:http';

/**
 * nginx's "client closed request": logged and counted, never sent (nobody
 * is there to read it).
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** Thrown into a request's long work when its client has gone: nobody waits for the answer. */
export class ClientGoneError extends Error {
  override name = 'ClientClosedRequestError';
  readonly statusCode = CLIENT_CLOSED_REQUEST;

  constructor() {
    super('the client closed the connection before the answer was ready');
  }
}

/**
 * Aborts, with a ClientGoneError, when `response`'s connection closes
 * before the response was written: work only its answer needs (a look
 * ahead, a backfill's verdicts) stops instead of running for nobody.
 */
export function clientGoneSignal(response: ServerResponse): AbortSignal {
  const gone = new AbortController();
  const watch = () => {
    if (!response.writableFinished) gone.abort(new ClientGoneError());
  };
  // Gone already: its 'close' was emitted before anyone listened.
  if (response.destroyed) watch();
  else response.once('close', watch);
  return gone.signal;
}
