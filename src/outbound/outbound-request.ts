import http from 'node:http';
import https from 'node:https';
import type {OutboundAllow} from './address-policy';
import {
  assertLiteralAllowed,
  guardedLookup,
  OutboundRefused,
} from './guarded-lookup';

export {OutboundRefused};

/** The response body is read up to this many bytes; the rest is dropped. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Bounds the whole exchange: connect, send, headers and body. */
  timeoutMs: number;
  /** Aborted by the caller (a consumer shutting down). */
  signal?: AbortSignal;
  maxResponseBytes?: number;
}

export interface OutboundResponse {
  status: number;
  /** Location of a 3xx, which is never followed. */
  location?: string;
  body: Buffer;
  /** True when the body was longer than the limit and was cut there. */
  bodyCut: boolean;
  durationMs: number;
}

/** The exchange did not finish within its time limit. */
export class OutboundTimedOut extends Error {
  override name = 'OutboundTimedOut';
}

/** The caller's signal stopped the exchange. */
export class OutboundAborted extends Error {
  override name = 'OutboundAborted';
}

/**
 * Sends one request through the SSRF guard: http(s) only, every address
 * checked after DNS (and literal ones before connecting), no redirects
 * followed, the body read up to a limit, everything within `timeoutMs`.
 */
export function sendOutbound(
  request: OutboundRequest,
  allow: OutboundAllow,
): Promise<OutboundResponse> {
  const url = new URL(request.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(
      new OutboundRefused('scheme', `only http and https URLs are called`),
    );
  }
  try {
    assertLiteralAllowed(url.hostname, allow);
  } catch (error) {
    return Promise.reject(error);
  }
  const limit = request.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal
    ? AbortSignal.any([timeout, request.signal])
    : timeout;
  return new Promise((resolve, reject) => {
    const failed = (error: unknown) => {
      if (request.signal?.aborted) {
        reject(new OutboundAborted('the request was stopped'));
      } else if (timeout.aborted) {
        reject(
          new OutboundTimedOut(
            `no complete answer within ${request.timeoutMs} ms`,
          ),
        );
      } else if (
        error instanceof OutboundRefused ||
        (error as {cause?: unknown}).cause instanceof OutboundRefused
      ) {
        reject(
          error instanceof OutboundRefused
            ? error
            : (error as {cause: OutboundRefused}).cause,
        );
      } else {
        reject(error);
      }
    };
    const client = url.protocol === 'https:' ? https : http;
    const outgoing = client.request(
      url,
      {
        method: request.method,
        headers: {
          ...request.headers,
          ...(request.body !== undefined
            ? {'content-length': String(Buffer.byteLength(request.body))}
            : {}),
        },
        lookup: guardedLookup(allow) as never,
        // A fresh connection per call: no pooled socket skips the check.
        agent: false,
        signal,
      },
      response => {
        const chunks: Buffer[] = [];
        let size = 0;
        let cut = false;
        const finish = () =>
          resolve({
            status: response.statusCode ?? 0,
            location:
              typeof response.headers.location === 'string'
                ? response.headers.location
                : undefined,
            body: Buffer.concat(chunks),
            bodyCut: cut,
            durationMs: elapsed(),
          });
        response.on('data', (chunk: Buffer) => {
          if (cut) return;
          const room = limit - size;
          if (chunk.length > room) {
            chunks.push(chunk.subarray(0, room));
            size = limit;
            cut = true;
            // Enough read: stop the transfer and answer with what we have.
            response.destroy();
            outgoing.destroy();
            finish();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        response.on('end', finish);
        response.on('error', error => {
          if (!cut) failed(error);
        });
      },
    );
    outgoing.on('error', error => failed(error));
    outgoing.end(request.body);
  });
}
