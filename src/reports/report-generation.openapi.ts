import type {ResponsesObject, SchemaObject} from '@loopback/rest';
import {reportNames} from './registry';
import {MAX_REPORT_PARAMS_BYTES} from './report-runner';
import {OUTPUT_FORMATS, OUTPUT_TYPES} from './report-options';
import {RENDERERS} from './renderers';

const ids = (description: string): SchemaObject => ({
  type: 'array',
  maxItems: 1000,
  items: {type: 'integer', minimum: 1},
  description,
});

/** The spec's report params shape; the code checks it again with clearer messages. */
export const REPORT_GENERATE_REQUEST_SCHEMA: SchemaObject = {
  type: 'object',
  title: 'ReportGenerateRequest',
  required: ['controller'],
  additionalProperties: false,
  properties: {
    controller: {
      type: 'string',
      maxLength: 200,
      description: `Report class name: ${reportNames().join(', ')}`,
    },
    options_interface: {
      type: 'object',
      title: 'ReportOptionsInterface',
      properties: {
        delivery: {
          type: 'object',
          title: 'ReportDelivery',
          properties: {
            email: {type: 'boolean', description: 'Deliver by e-mail'},
            web_notification: {
              type: 'boolean',
              description: 'Deliver as a web notification',
            },
            instant: {
              type: 'boolean',
              description:
                'true: run within the request; false or absent: queue a report task (202)',
            },
            deliver_to: {
              type: 'object',
              title: 'ReportRecipients',
              properties: {
                user_id: ids('Recipient users'),
                group_id: ids('Recipient groups (their active members)'),
              },
            },
          },
        },
        output: {
          type: 'object',
          title: 'ReportOutput',
          properties: {
            file: {
              type: 'object',
              title: 'ReportOutputFile',
              properties: {
                type: {type: 'string', enum: [...OUTPUT_TYPES]},
                format: {type: 'string', enum: [...OUTPUT_FORMATS]},
                filename: {
                  type: 'string',
                  maxLength: 500,
                  description:
                    'May contain {{date}}, {{today}}, {{yesterday}} (CRON_TZ) and {{user_id}}; sanitised, extension added',
                },
              },
            },
          },
        },
      },
    },
    report_params: {
      type: 'object',
      additionalProperties: true,
      description: `Report-specific parameters (at most ${MAX_REPORT_PARAMS_BYTES} bytes of JSON); strings may contain template variables`,
    },
  },
};

const binary: SchemaObject = {type: 'string', format: 'binary'};

export const REPORT_GENERATE_RESPONSES: ResponsesObject = {
  '200': {
    description:
      'instant: the file itself (output.file.type Direct), or a description of the delivery (Attachment)',
    content: {
      ...Object.fromEntries(
        Object.values(RENDERERS).map(r => [
          r.contentType.split(';')[0],
          {schema: binary},
        ]),
      ),
      'application/json': {
        schema: {
          type: 'object',
          title: 'ReportDelivered',
          properties: {
            status: {type: 'string', enum: ['delivered']},
            report: {type: 'string'},
            format: {type: 'string'},
            filename: {type: 'string'},
            rows: {type: 'integer'},
            bytes: {type: 'integer'},
            deliveries: {
              type: 'object',
              title: 'ReportDeliveries',
              properties: {
                email: {
                  type: 'object',
                  title: 'ReportEmailReceipt',
                  properties: {
                    transport: {type: 'string', enum: ['smtp', 'file']},
                    message_id: {
                      type: 'string',
                      description:
                        'The Message-ID of the e-mail (also in the log, with the outbox file when SMTP_URL is unset)',
                    },
                    recipients: {type: 'integer'},
                  },
                },
                web_notification: {
                  type: 'object',
                  title: 'ReportNotificationReceipt',
                  properties: {notified_users: {type: 'integer'}},
                },
              },
            },
          },
        },
      },
    },
  },
  '202': {
    description: 'Queued as a report task',
    content: {
      'application/json': {
        schema: {
          type: 'object',
          title: 'ReportQueued',
          properties: {
            status: {
              type: 'string',
              enum: ['queued', 'pending'],
              description:
                "queued: the broker confirmed the task; pending: no confirm came, the producer's sweeper publishes the stored run within CRON_SWEEP_AFTER_MS",
            },
            execution_id: {type: 'integer'},
            execution_key: {type: 'string'},
            scheduler_id: {type: 'integer'},
          },
        },
      },
    },
  },
  '429': {
    description:
      'The caller already has REPORT_MAX_QUEUED_PER_USER queued reports waiting; see Retry-After',
  },
};
