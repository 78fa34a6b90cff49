import {createServer, IncomingMessage, Server, ServerResponse} from 'node:http';
import type {AddressInfo} from 'node:net';
import type {Logger} from '../logging/logger';
import {
  HealthResponse,
  livenessResponse,
  readinessResponse,
  ReadinessReport,
} from './readiness';

export interface HealthServerOptions {
  host: string;
  port: number;
  /** The API's base path, so probes use the same paths in every mode. */
  basePath: string;
  ready: () => Promise<ReadinessReport>;
  /** The Prometheus text of this process, served at GET /metrics. */
  metrics?: () => Promise<{contentType: string; body: string}>;
  logger: Logger;
}

/** Where Prometheus scrapes every role (outside the API base path, as is usual). */
export const METRICS_PATH = '/metrics';

/** A body sent as it is (the metrics text), not as JSON. */
interface RawResponse {
  statusCode: number;
  contentType: string;
  raw: string;
}

function errorResponse(
  statusCode: number,
  name: string,
  message: string,
): HealthResponse {
  return {statusCode, body: {error: {statusCode, name, message}}};
}

/** RFC 9110: a 405 names the methods the resource does allow. */
function methodNotAllowed(path: string): HealthResponse {
  return {
    ...errorResponse(
      405,
      'MethodNotAllowedError',
      `Only GET is allowed on ${path}`,
    ),
    headers: {Allow: 'GET, HEAD'},
  };
}

/**
 * A small HTTP server for the roles without the API (scheduler, worker,
 * stay-alive): GET <base>/health and GET <base>/ready, answered like the
 * API's own, so a container healthcheck works the same in every mode.
 */
export class HealthServer {
  private server?: Server;

  constructor(private readonly options: HealthServerOptions) {}

  /** The port it listens on (useful with port 0). */
  get port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      this.answer(request)
        .catch(() =>
          errorResponse(500, 'InternalServerError', 'Internal Server Error'),
        )
        .then(result =>
          'raw' in result ? sendRaw(response, result) : send(response, result),
        )
        .catch(() => undefined);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.options.logger.info('Health server listening', {
      host: this.options.host,
      port: this.port,
      paths: [
        `${this.options.basePath}/health`,
        `${this.options.basePath}/ready`,
        ...(this.options.metrics ? [METRICS_PATH] : []),
      ],
    });
  }

  /** Idempotent; open keep-alive connections are closed too. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>(resolve => server.close(() => resolve()));
  }

  private async answer(
    request: IncomingMessage,
  ): Promise<HealthResponse | RawResponse> {
    const path = (request.url ?? '/').split('?')[0];
    const base = this.options.basePath;
    if (path === METRICS_PATH && this.options.metrics) {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return methodNotAllowed(path);
      }
      const {contentType, body} = await this.options.metrics();
      return {statusCode: 200, contentType, raw: body};
    }
    if (path !== `${base}/health` && path !== `${base}/ready`) {
      return errorResponse(
        404,
        'NotFoundError',
        `Endpoint "${request.method} ${path.slice(0, 200)}" not found`,
      );
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return methodNotAllowed(path);
    }
    return path === `${base}/health`
      ? livenessResponse(new Date())
      : readinessResponse(await this.options.ready());
  }
}

function sendRaw(response: ServerResponse, result: RawResponse): void {
  response.writeHead(result.statusCode, {
    'Content-Type': result.contentType,
    'Content-Length': Buffer.byteLength(result.raw),
    'Cache-Control': 'no-store',
  });
  response.end(result.raw);
}

function send(response: ServerResponse, result: HealthResponse): void {
  const body = JSON.stringify(result.body);
  response.writeHead(result.statusCode, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    ...result.headers,
  });
  response.end(body);
}
