import type {Server} from 'node:net';
import {randomUUID} from 'node:crypto';
import {STATUS_CODES} from 'node:http';
import type {Duplex} from 'node:stream';
import type {Logger} from '../logging/logger';
import {toHttpError} from './error-mapping';
import {REQUEST_ID_HEADER} from './request-id.middleware';

/** Requests Node's HTTP parser refuses before any route runs, by error code. */
const STATUS_BY_CODE: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/**
 * The raw HTTP response for a request the parser refused (a 20 kB URL, a
 * broken request line): the uniform error body, then the connection closes.
 * Node's own answer would be a bare status line with no body.
 */
export function clientErrorResponse(
  code: string | undefined,
  requestId: string,
): string {
  const statusCode = (code ? STATUS_BY_CODE[code] : undefined) ?? 400;
  const body = JSON.stringify({
    error: {
      ...toHttpError({statusCode, message: STATUS_CODES[statusCode]}),
      request_id: requestId,
    },
  });
  return [
    `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    // Its header could not be read, so the id is always a new one.
    `${REQUEST_ID_HEADER}: ${requestId}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

type ParserError = Error & {code?: string};
type ClientSocket = Duplex & {_httpMessage?: {headersSent?: boolean}};

/** Answers parser-level refusals with the uniform body and an info line (a client fault; an HTTP or HTTPS server). */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (error: ParserError, socket: ClientSocket) => {
    // A reset peer, or one whose answer has already begun, cannot be told more.
    if (
      error.code === 'ECONNRESET' ||
      !socket.writable ||
      socket._httpMessage?.headersSent
    ) {
      socket.destroy();
      return;
    }
    const requestId = randomUUID();
    const response = clientErrorResponse(error.code, requestId);
    logger.info('Malformed HTTP request refused', {
      error_code: error.code,
      status_code: Number(response.split(' ')[1]),
      request_id: requestId,
    });
    socket.end(response);
  });
}
