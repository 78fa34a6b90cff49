import {randomUUID} from 'node:crypto';
import type {Pool} from 'pg';
import type {OutboundAllow} from '../outbound/address-policy';
import {
  OutboundAborted,
  OutboundRefused,
  OutboundResponse,
  OutboundTimedOut,
  sendOutbound,
} from '../outbound/outbound-request';
import {isSuccessStatus} from '../outbound/success-status';
import {redactEchoedSecrets} from '../outbound/redact-echoed-secrets';
import {webhookHeaders} from '../outbound/webhook-signature';
import {resolveTemplate} from '../reports/template-variables';
import {
  TaskAborted,
  beforeTaskStarts,
  TaskContext,
  TaskExecutor,
  TaskFailure,
  TaskTimedOut,
} from './task-executor';

/** The ledger keeps this much of a response body. */
export const LEDGER_BODY_BYTES = 8 * 1024;

export interface HttpExecutorOptions {
  outboundAllow: OutboundAllow;
  /** CRON_TZ: the calendar of {{today}} and {{yesterday}} in the body. */
  timeZone: string;
  clock?: () => Date;
}

interface TargetRow {
  url: string;
  method: string;
  headers: Record<string, string>;
  secret_headers: Record<string, string>;
  body: string | null;
  timeout_ms: number;
  success_status: string;
  signing_secret: string;
  previous_signing_secret: string | null;
  previous_secret_expires_at: Date | null;
  owner_id: number | null;
}

/**
 * Calls an HTTP target, signed the Standard Webhooks way. Every attempt of
 * one run carries the same webhook-id, so a receiver drops duplicates. The
 * answer's status, and the start of its body, go to the run ledger; a
 * status outside success_status, a redirect, a refusal of the SSRF guard
 * or a timeout is a failure that takes the normal retry path. Header
 * values are never logged.
 */
export class HttpExecutor implements TaskExecutor {
  private readonly clock: () => Date;

  constructor(
    private readonly pool: Pool,
    private readonly options: HttpExecutorOptions,
  ) {
    this.clock = options.clock ?? (() => new Date());
  }

  async execute(context: TaskContext): Promise<void> {
    const target = await this.target(context);
    const now = this.clock();
    const body =
      target.body === null
        ? ''
        : resolveTemplate(target.body, {
            now,
            timeZone: this.options.timeZone,
            userId: target.owner_id,
          });
    const secrets = [
      target.signing_secret,
      ...(target.previous_signing_secret &&
      target.previous_secret_expires_at &&
      target.previous_secret_expires_at.getTime() > now.getTime()
        ? [target.previous_signing_secret]
        : []),
    ];
    const id = webhookIdOf(context);
    const hasBody = target.method !== 'GET' && target.body !== null;
    const host = safeHost(target.url);
    let response: OutboundResponse;
    try {
      response = await sendOutbound(
        {
          url: target.url,
          method: target.method,
          headers: {
            'user-agent': 'task-scheduler',
            ...(hasBody ? {'content-type': 'application/json'} : {}),
            ...target.headers,
            ...target.secret_headers,
            ...webhookHeaders(secrets, id, now, hasBody ? body : ''),
          },
          body: hasBody ? body : undefined,
          timeoutMs: target.timeout_ms,
          signal: context.signal,
        },
        this.options.outboundAllow,
      );
    } catch (error) {
      if (error instanceof OutboundAborted) {
        throw new TaskAborted('HTTP call stopped by shutdown');
      }
      await this.record(context, null, null, false);
      if (error instanceof OutboundRefused) {
        context.logger.warn('HTTP call refused', {
          host,
          rule: error.rule,
          error: error.message,
        });
        throw new TaskFailure(error.message);
      }
      if (error instanceof OutboundTimedOut) {
        throw new TaskTimedOut(`HTTP call to ${host}: ${error.message}`);
      }
      throw new TaskFailure(
        `HTTP call to ${host} failed: ${(error as Error).message}`,
      );
    }
    await this.record(
      context,
      response.status,
      ledgerText(response.body, Object.values(target.secret_headers ?? {})),
      response.bodyCut,
    );
    const fields = {
      host,
      status_code: response.status,
      call_ms: Math.round(response.durationMs),
      ...(response.bodyCut ? {body_cut: true} : {}),
    };
    if (response.status >= 300 && response.status < 400) {
      context.logger.warn('HTTP call redirected; not followed', fields);
      throw new TaskFailure(
        `HTTP ${response.status}: redirect${response.location ? ` to ${safeHost(response.location, target.url)}` : ''} not followed`,
      );
    }
    if (!isSuccessStatus(response.status, target.success_status)) {
      throw new TaskFailure(
        `HTTP ${response.status} is not a success status (${target.success_status})`,
      );
    }
    context.logger.info('HTTP call succeeded', fields);
  }

  private async target(context: TaskContext): Promise<TargetRow> {
    const {rows} = await beforeTaskStarts(
      `HTTP target ${context.message.id}`,
      () =>
        this.pool.query<TargetRow>(
          `SELECT t.url, t.method, t.headers, t.secret_headers, t.body, t.timeout_ms,
              t.success_status, t.signing_secret, t.previous_signing_secret,
              t.previous_secret_expires_at,
              (SELECT s.user_id FROM scheduler s WHERE s.id = $2) AS owner_id
         FROM http_target t WHERE t.id = $1`,
          [context.message.id, context.message.scheduler_id],
        ),
    );
    if (rows.length === 0) {
      throw new TaskFailure(`HTTP target ${context.message.id} does not exist`);
    }
    return rows[0];
  }

  /** The attempt's answer in the ledger row of its run (the last attempt's wins). */
  private async record(
    context: TaskContext,
    status: number | null,
    body: string | null,
    cut: boolean,
  ): Promise<void> {
    if (!context.executionKey) return;
    await this.pool
      .query(
        `UPDATE scheduler_execution
            SET http_status = $3, response_body = $4, output_truncated = $5
          WHERE scheduler_id = $1 AND execution_key = $2`,
        [context.message.scheduler_id, context.executionKey, status, body, cut],
      )
      .catch(error =>
        context.logger.warn('Could not record the HTTP answer', {
          error: (error as Error).message,
        }),
      );
  }
}

/** The same on every attempt of a run: the scheduler and the run's key. */
function webhookIdOf(context: TaskContext): string {
  const key = context.executionKey ?? randomUUID();
  return `run_${context.message.scheduler_id}_${key}`;
}

/** The host alone: paths and queries may carry tokens, so logs never get them. */
function safeHost(url: string, base?: string): string {
  try {
    return new URL(url, base).host;
  } catch {
    return '(invalid URL)';
  }
}

/** The first 8 KiB as text; NUL bytes, which PostgreSQL text refuses, dropped. */
/**
 * The start of the body for the ledger, with echoed credentials redacted
 * before the cut: read past the 8 KiB mark by the longest credential, so
 * one straddling the mark is still found whole.
 */
function ledgerText(body: Buffer, secretValues: string[]): string {
  const margin = Math.max(0, ...secretValues.map(v => Buffer.byteLength(v)));
  const redacted = redactEchoedSecrets(
    body
      .subarray(0, LEDGER_BODY_BYTES + margin)
      .toString('utf8')
      .replaceAll('\u0000', ''),
    secretValues,
  );
  return Buffer.from(redacted, 'utf8')
    .subarray(0, LEDGER_BODY_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}
