import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {oas, post, requestBody, Response, RestBindings} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {createReadStream} from 'node:fs';
import {pipeline} from 'node:stream/promises';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import {BrokerService} from '../queue/broker.service';
import {queueReport, QueuedReport} from '../reports/queue-report';
import {ReportInputError, ReportRequest} from '../reports/report';
import {ReportGenerationService} from '../reports/report-generation.service';
import {
  REPORT_GENERATE_REQUEST_SCHEMA,
  REPORT_GENERATE_RESPONSES,
} from '../reports/report-generation.openapi';
import {
  deliverReport,
  DeliveryReceipt,
  hasDeliveryChannel,
  planRecipients,
  prepareReport,
  renderReport,
  reportWorkDir,
  ReportTimeoutError,
} from '../reports/report-runner';

export interface DeliveredReport {
  status: 'delivered';
  report: string;
  format: string;
  filename: string;
  rows: number;
  bytes: number;
  deliveries: DeliveryReceipt;
}

/** The receipt as a caller may see it: the outbox file's path stays in the log. */
function publicReceipt({email, ...rest}: DeliveryReceipt): DeliveryReceipt {
  if (!email) return rest;
  const {transport, message_id: messageId, recipients} = email;
  return {...rest, email: {transport, message_id: messageId, recipients}};
}

/** POST /reports/generate: run a report now, or queue it as a task. */
@oas.tags('Report')
@authenticate(...BEARER_STRATEGIES)
export class ReportGenerationController {
  constructor(
    @inject('services.ReportGenerationService')
    private readonly reports: ReportGenerationService,
    @inject('services.BrokerService') private readonly broker: BrokerService,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
  ) {}

  @post('/reports/generate', {
    summary: 'Run a report now, or queue it',
    description:
      'With delivery.instant (the default) the report runs within the request: a Direct file answers with the file itself, an Attachment is delivered (e-mail, web notification) and described. Otherwise it is queued as a report task (202). Roles: admin, operator.',
    responses: REPORT_GENERATE_RESPONSES,
  })
  @oas.response(422, {
    description:
      'Unknown controller, bad options_interface or report_params, or nobody to deliver to',
  })
  @oas.response(502, {description: 'Delivery (e-mail) failed'})
  @oas.response(503, {description: 'The broker is unavailable (queued runs)'})
  @oas.response(504, {description: 'An instant report ran out of time'})
  @authorize({allowedRoles: OPERATORS})
  async generate(
    @requestBody({
      required: true,
      content: {'application/json': {schema: REPORT_GENERATE_REQUEST_SCHEMA}},
    })
    body: ReportRequest,
  ): Promise<Response | DeliveredReport | QueuedReport> {
    const now = this.reports.now();
    const services = this.reports.services();
    const prepared = prepareReport(body, {
      now,
      timeZone: services.timeZone,
      userId: this.user.id,
    });
    const {delivery, output} = prepared.options;
    if (output.type === 'Attachment' && !hasDeliveryChannel(prepared.options)) {
      throw new ReportInputError(
        'Attachment output needs a delivery channel: set options_interface.delivery.email or web_notification',
        [
          {
            path: '/options_interface/delivery',
            code: 'channel',
            message: 'no channel',
          },
        ],
      );
    }
    const recipients = await planRecipients(prepared, services.db);
    if (!delivery.instant) {
      if (output.type === 'Direct') {
        throw new ReportInputError(
          'Direct output is returned in the response: it needs options_interface.delivery.instant true',
          [
            {
              path: '/options_interface/delivery/instant',
              code: 'direct',
              message: 'must be true for Direct',
            },
          ],
        );
      }
      const publisher = await this.broker.taskPublisher();
      const queued = await queueReport(services.db, publisher, body, {
        userId: this.user.id,
        now,
        containerId: this.reports.config.containerId,
        maxQueuedPerUser: this.reports.config.reports.maxQueuedPerUser,
      });
      this.response.status(202);
      return queued;
    }

    const work = await reportWorkDir();
    try {
      const signal = AbortSignal.timeout(
        this.reports.config.reports.instantTimeoutMs,
      );
      const rendered = await renderReport(
        prepared,
        services,
        work.dir,
        signal,
      ).catch(error => {
        throw signal.aborted
          ? new ReportTimeoutError(
              `The report did not finish within ${this.reports.config.reports.instantTimeoutMs} ms; queue it (delivery.instant false) instead`,
            )
          : error;
      });
      const deliveries = await deliverReport(
        prepared,
        rendered,
        recipients,
        services,
      );
      if (output.type === 'Attachment') {
        return {
          status: 'delivered',
          report: prepared.controller,
          format: output.format,
          filename: rendered.filename,
          rows: rendered.rows,
          bytes: rendered.bytes,
          deliveries: publicReceipt(deliveries),
        };
      }
      // attachment() sets Content-Disposition (with an RFC 5987 form for non-ASCII names).
      this.response.attachment(rendered.filename);
      this.response.status(200);
      this.response.setHeader('Content-Type', rendered.contentType);
      this.response.setHeader('Content-Length', String(rendered.bytes));
      this.response.setHeader('X-Report-Rows', String(rendered.rows));
      await pipeline(createReadStream(rendered.path), this.response);
      return this.response;
    } finally {
      await work.cleanup();
    }
  }
}
