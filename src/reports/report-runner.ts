import {mkdtemp, rm, stat} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import path from 'node:path';
import type {Pool} from 'pg';
import type {Logger} from '../logging/logger';
import {notifyUsers} from './delivery/notifier';
import {Recipient, resolveRecipients} from './delivery/recipients';
import type {
  MailReceipt,
  ReportMail,
  ReportMailer,
} from './delivery/report-mailer';
import {sanitiseFileName} from './file-name';
import {findReport} from './registry';
import {
  ReportDefinition,
  ReportInputError,
  ReportRequest,
  ReportRow,
} from './report';
import {capRows, cappedFileWriter, ReportLimits} from './report-limits';
import {parseReportOptions, ReportOptions} from './report-options';
import {RENDERERS, ReportRenderer} from './renderers';
import {
  resolveTemplate,
  resolveTemplatesDeep,
  TemplateContext,
} from './template-variables';

/** report_params larger than this (as JSON) are refused: they are filters, not data. */
export const MAX_REPORT_PARAMS_BYTES = 16 * 1024;

export interface ReportServices {
  db: Pool;
  mailer: ReportMailer;
  logger: Logger;
  /** CRON_TZ */
  timeZone: string;
  /** CRON_CATCHUP_MINUTES */
  catchUpMinutes: number;
  limits: ReportLimits;
}

/** A request that passed every boundary check, ready to render. */
export interface PreparedReport {
  controller: string;
  definition: ReportDefinition<unknown>;
  params: unknown;
  options: ReportOptions;
  renderer: ReportRenderer;
  filename: string;
  userId: number | null;
  now: Date;
  schedulerId?: number;
}

export interface RenderedReport {
  path: string;
  filename: string;
  contentType: string;
  rows: number;
  bytes: number;
}

export interface DeliveryReceipt {
  email?: MailReceipt;
  web_notification?: {notified_users: number};
}

/** Delivery failed (mail server down, ...): a 502 at the API, a retried failure in a task. */
export class ReportDeliveryError extends Error {
  override name = 'ReportDeliveryError';
  readonly statusCode = 502;
}

/** The report did not finish in time. */
export class ReportTimeoutError extends Error {
  override name = 'ReportTimeoutError';
  readonly statusCode = 504;
}

/** Checks controller, options and params; resolves template variables and the file name. */
export function prepareReport(
  request: ReportRequest,
  context: {now: Date; timeZone: string; userId: number | null},
): PreparedReport {
  const definition = findReport(request.controller);
  const rawParams = request.report_params ?? {};
  if (
    typeof rawParams !== 'object' ||
    rawParams === null ||
    Array.isArray(rawParams)
  ) {
    throw new ReportInputError('report_params must be an object', [
      {path: '/report_params', code: 'type', message: 'must be an object'},
    ]);
  }
  if (Buffer.byteLength(JSON.stringify(rawParams)) > MAX_REPORT_PARAMS_BYTES) {
    throw new ReportInputError(
      `report_params may hold at most ${MAX_REPORT_PARAMS_BYTES} bytes of JSON`,
      [{path: '/report_params', code: 'maxLength', message: 'too large'}],
    );
  }
  const options = parseReportOptions(request.options_interface);
  const templates: TemplateContext = {
    now: context.now,
    timeZone: context.timeZone,
    userId: context.userId,
  };
  const params = definition.parseParams(
    resolveTemplatesDeep(rawParams, templates) as Record<string, unknown>,
    {timeZone: context.timeZone, now: context.now},
  );
  const renderer = RENDERERS[options.output.format];
  const filename = sanitiseFileName(
    resolveTemplate(
      options.output.filename ?? `${request.controller}-{{date}}`,
      templates,
    ),
    renderer.extension,
  );
  return {
    controller: request.controller,
    definition,
    params,
    options,
    renderer,
    filename,
    userId: context.userId,
    now: context.now,
    schedulerId: request.scheduler_id,
  };
}

/** Whether anybody receives the report when it is not returned directly. */
export function hasDeliveryChannel(options: ReportOptions): boolean {
  return options.delivery.email || options.delivery.web_notification;
}

/**
 * Who gets the report. Checked before rendering, so a report nobody can
 * receive fails fast (422 at the API) instead of after the work.
 */
export async function planRecipients(
  prepared: PreparedReport,
  db: Pool,
): Promise<Recipient[]> {
  if (!hasDeliveryChannel(prepared.options)) return [];
  const recipients = await resolveRecipients(
    db,
    prepared.options.delivery.deliver_to,
    prepared.userId,
  );
  if (recipients.length === 0) {
    throw new ReportInputError(
      'The report has no active recipient: name users or groups in options_interface.delivery.deliver_to',
      [
        {
          path: '/options_interface/delivery/deliver_to',
          code: 'recipients',
          message: 'no active user among the recipients',
        },
      ],
    );
  }
  return recipients;
}

async function* guarded(
  rows: AsyncIterable<ReportRow>,
  signal?: AbortSignal,
): AsyncGenerator<ReportRow> {
  for await (const row of rows) {
    if (signal?.aborted) {
      throw new ReportTimeoutError('The report did not finish in time');
    }
    yield row;
  }
}

/** Streams the report into `dir` under a fixed name (never the requested one). */
export async function renderReport(
  prepared: PreparedReport,
  services: ReportServices,
  dir: string,
  signal?: AbortSignal,
): Promise<RenderedReport> {
  const file = path.join(dir, `report.${prepared.renderer.extension}`);
  const rows = await prepared.renderer.render(
    {
      title: prepared.definition.title,
      subtitle: `${prepared.definition.description}. Generated ${prepared.now.toISOString()}`,
      columns: prepared.definition.columns,
      rows: capRows(
        guarded(
          prepared.definition.rows(prepared.params as never, {
            db: services.db,
            now: prepared.now,
            timeZone: services.timeZone,
            catchUpMinutes: services.catchUpMinutes,
          }),
          signal,
        ),
        services.limits.maxRows,
      ),
    },
    cappedFileWriter(file, services.limits.maxBytes),
  );
  return {
    path: file,
    filename: prepared.filename,
    contentType: prepared.renderer.contentType,
    rows,
    bytes: (await stat(file)).size,
  };
}

/** The file as attachment, or a notice when it is over the attachment cap. */
function mailBody(
  title: string,
  rendered: RenderedReport,
  maxAttachmentBytes: number,
): Pick<ReportMail, 'text' | 'attachment'> {
  if (rendered.bytes > maxAttachmentBytes) {
    return {
      text: `The report "${title}" (${rendered.rows} rows, ${rendered.bytes} bytes) was too large to attach: e-mail attachments are limited to ${maxAttachmentBytes} bytes. Download it from the service instead.`,
    };
  }
  return {
    text: `The report "${title}" (${rendered.rows} rows) is attached as ${rendered.filename}.`,
    attachment: {
      filename: rendered.filename,
      path: rendered.path,
      contentType: rendered.contentType,
    },
  };
}

/** E-mail and/or web notifications, as the options ask. Any failure throws. */
export async function deliverReport(
  prepared: PreparedReport,
  rendered: RenderedReport,
  recipients: Recipient[],
  services: ReportServices,
): Promise<DeliveryReceipt> {
  const receipt: DeliveryReceipt = {};
  const {delivery} = prepared.options;
  const title = prepared.definition.title;
  if (delivery.email) {
    try {
      receipt.email = await services.mailer.send({
        to: recipients.map(r => r.email),
        subject: `Report: ${title}`,
        ...mailBody(title, rendered, services.limits.mailAttachmentMaxBytes),
      });
    } catch (error) {
      services.logger.error('Report e-mail failed', {
        error: (error as Error).message,
        report: prepared.controller,
      });
      throw new ReportDeliveryError(
        `e-mail delivery failed: ${(error as Error).message}`,
      );
    }
  }
  if (delivery.web_notification) {
    const notified = await notifyUsers(
      services.db,
      recipients.map(r => r.id),
      {
        title: `Report ready: ${title}`,
        body: `${rendered.filename} (${rendered.rows} rows)${delivery.email ? ', sent by e-mail' : ''}`,
        payload: {
          report: prepared.controller,
          filename: rendered.filename,
          rows: rendered.rows,
          bytes: rendered.bytes,
          emailed: delivery.email,
          scheduler_id: prepared.schedulerId ?? null,
        },
      },
    );
    receipt.web_notification = {notified_users: notified};
  }
  return receipt;
}

/** A temporary folder of our own for one report file, removed by `cleanup`. */
export async function reportWorkDir(): Promise<{
  dir: string;
  cleanup: () => Promise<void>;
}> {
  const dir = await mkdtemp(path.join(tmpdir(), 'task-scheduler-report-'));
  return {dir, cleanup: () => rm(dir, {recursive: true, force: true})};
}

/** What a scheduled run does: prepare, render, deliver, clean up. */
export async function runReport(
  request: ReportRequest,
  services: ReportServices,
  context: {now: Date; userId: number | null; signal?: AbortSignal},
): Promise<Record<string, unknown>> {
  const prepared = prepareReport(request, {
    now: context.now,
    timeZone: services.timeZone,
    userId: context.userId,
  });
  const recipients = await planRecipients(prepared, services.db);
  const work = await reportWorkDir();
  try {
    const rendered = await renderReport(
      prepared,
      services,
      work.dir,
      context.signal,
    );
    const deliveries = await deliverReport(
      prepared,
      rendered,
      recipients,
      services,
    );
    return {
      report: prepared.controller,
      format: prepared.options.output.format,
      filename: rendered.filename,
      rows: rendered.rows,
      bytes: rendered.bytes,
      instant: prepared.options.delivery.instant,
      deliveries,
    };
  } finally {
    await work.cleanup();
  }
}
