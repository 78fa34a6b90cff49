import {randomBytes} from 'node:crypto';
import {performance} from 'node:perf_hooks';
import {ServiceProcess, startService} from '../fixtures/service-process';
import {ACTOR_PASSWORD, ACTOR_ROLES, Actors} from './fuzz-environment';
import type {AuthKind, FuzzRequest} from './request-arbitrary';
import type {Answer} from './response-checks';

/** Past this a request counts as hung, not merely slow. */
const HANG_MS = 15_000;
const CRASH_LINE = /uncaught|unhandled|fatal|heap out of memory|RangeError/i;

const base64url = (value: object) =>
  Buffer.from(JSON.stringify(value)).toString('base64url');

/** POST /auth/login with a well-formed body. */
export function loginRequest(email: string, password: string): FuzzRequest {
  return {
    operation: 'login',
    method: 'POST',
    path: '/auth/login',
    query: [],
    auth: 'none',
    body: {
      kind: 'valid',
      contentType: 'application/json',
      text: JSON.stringify({email, password}),
    },
  };
}

/** The real service (`node dist/index.js`, API role, production settings). */
export class FuzzService {
  readonly process: ServiceProcess;
  baseUrl = '';
  private readonly headers = new Map<AuthKind, string | undefined>();

  constructor() {
    this.process = startService({
      APP_MODE: 'api',
      NODE_ENV: 'production',
      JWT_SECRET: randomBytes(32).toString('hex'),
      LOG_LEVEL: 'info',
    });
  }

  async start(actors: Actors): Promise<void> {
    const started = await this.process.waitForLog('Service started', 30_000);
    // The logged url already ends in the API base path.
    this.baseUrl = String(started.url).replace(/\/$/, '');
    for (const role of ACTOR_ROLES) {
      const answer = await this.send(
        loginRequest(actors.email(role), ACTOR_PASSWORD),
      );
      if (answer.status !== 200) {
        throw new Error(
          `login as ${role} failed: ${answer.status} ${answer.text}`,
        );
      }
      this.headers.set(role, `Bearer ${JSON.parse(answer.text).token}`);
    }
    // An unsigned token claiming to be the admin: must be refused like any forgery.
    const adminClaims = this.headers.get('admin')!.split('.')[1];
    this.headers.set(
      'forged',
      `Bearer ${base64url({alg: 'none', typ: 'JWT'})}.${adminClaims}.`,
    );
    this.headers.set('malformed', 'Bearer not.a.token');
    this.headers.set('none', undefined);
  }

  url(request: Pick<FuzzRequest, 'path' | 'query'>): string {
    const query = new URLSearchParams(request.query).toString();
    return `${this.baseUrl}${request.path}${query ? `?${query}` : ''}`;
  }

  authorization(auth: AuthKind): string | undefined {
    return this.headers.get(auth);
  }

  async send(request: FuzzRequest): Promise<Answer> {
    const headers: Record<string, string> = {};
    const authorization = this.authorization(request.auth);
    if (authorization) headers.authorization = authorization;
    if (request.body?.contentType) {
      headers['content-type'] = request.body.contentType;
    }
    const started = performance.now();
    const response = await fetch(this.url(request), {
      method: request.method,
      headers,
      body: request.body?.text,
      signal: AbortSignal.timeout(HANG_MS),
    });
    const text = await response.text();
    return {
      status: response.status,
      contentType: response.headers.get('content-type') ?? '',
      text,
      ms: performance.now() - started,
      retryAfter: response.headers.get('retry-after') ?? undefined,
      requestId: response.headers.get('x-request-id') ?? undefined,
    };
  }

  /** Signs of a crash: exited, not answering, or an uncaught error logged. */
  async crashEvidence(): Promise<string[]> {
    const evidence: string[] = [];
    const {child} = this.process;
    if (child.exitCode !== null || child.signalCode !== null) {
      evidence.push(
        `exited (code ${child.exitCode}, signal ${child.signalCode})`,
      );
    } else {
      try {
        const ping = await fetch(`${this.baseUrl}/ping`, {
          signal: AbortSignal.timeout(5000),
        });
        if (ping.status !== 200) evidence.push(`/ping answered ${ping.status}`);
      } catch (error) {
        evidence.push(`/ping failed: ${(error as Error).message}`);
      }
    }
    for (const record of this.process.records()) {
      if (CRASH_LINE.test(String(record.msg))) {
        evidence.push(`log: ${JSON.stringify(record).slice(0, 500)}`);
      }
    }
    for (const line of this.process.stderr) {
      if (CRASH_LINE.test(line)) evidence.push(`stderr: ${line.slice(0, 500)}`);
    }
    return evidence;
  }

  /**
   * Error-level records: 5xx answers and anything unexpected (a refused
   * request's `Request failed` is info or warn, never error).
   */
  serverErrorLogs(): Array<Record<string, unknown>> {
    return this.process
      .records()
      .filter(
        record =>
          record.level === 'error' &&
          !(
            record.msg === 'Request failed' && Number(record.status_code) < 500
          ),
      );
  }

  async stop(): Promise<void> {
    const {child} = this.process;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await this.process.exited();
  }
}
