import {injectable} from '@loopback/core';
import {
  asSpecEnhancer,
  OASEnhancer,
  OpenApiSpec,
  ResponseObject,
  SchemaObject,
} from '@loopback/rest';
import {forEachOperation} from './operations';

export const ERROR_RESPONSE_SCHEMA_NAME = 'ErrorResponse';

/** The one body of every failed request (src/middleware/error-response.ts). */
export const ERROR_RESPONSE_SCHEMA: SchemaObject = {
  title: ERROR_RESPONSE_SCHEMA_NAME,
  description: 'The body of every error response',
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['statusCode', 'name', 'message'],
      properties: {
        statusCode: {type: 'integer', minimum: 400, maximum: 599},
        name: {type: 'string', example: 'UnprocessableEntityError'},
        message: {type: 'string'},
        details: {
          description: 'Validation errors only: one entry per invalid field',
          type: 'array',
          items: {
            type: 'object',
            required: ['path', 'code', 'message'],
            properties: {
              path: {
                type: 'string',
                description: 'JSON pointer to the field',
                example: '/schedule',
              },
              code: {type: 'string'},
              message: {type: 'string'},
              info: {type: 'object', additionalProperties: true},
            },
          },
        },
        request_id: {
          type: 'string',
          description:
            'The id of the request (the X-Request-Id response header): quote it when reporting a problem; every log record of the request carries it',
        },
        stack: {
          type: 'string',
          description: 'Only with NODE_ENV=development',
        },
      },
    },
  },
};

/** A response in the uniform error body. */
export function errorResponse(description: string): ResponseObject {
  return {
    description,
    content: {
      'application/json': {
        schema: {$ref: `#/components/schemas/${ERROR_RESPONSE_SCHEMA_NAME}`},
      },
    },
  };
}

const isErrorStatus = (status: string) => /^[45]/.test(status);

/**
 * Documents the uniform error body once, as `ErrorResponse`, and points every
 * operation's error responses at it, plus a `default` response for the
 * statuses an operation does not list, so generated clients can type errors.
 */
@injectable(asSpecEnhancer)
export class ErrorResponsesEnhancer implements OASEnhancer {
  name = 'error-responses';

  modifySpec(spec: OpenApiSpec): OpenApiSpec {
    spec.components = {
      ...spec.components,
      schemas: {
        ...spec.components?.schemas,
        [ERROR_RESPONSE_SCHEMA_NAME]: structuredClone(ERROR_RESPONSE_SCHEMA),
      },
    };
    forEachOperation(spec, operation => {
      const responses = (operation.responses ??= {}) as Record<
        string,
        ResponseObject
      >;
      for (const [status, response] of Object.entries(responses)) {
        if (isErrorStatus(status)) {
          responses[status] = errorResponse(response.description);
        }
      }
      responses.default ??= errorResponse(
        'Any other error, in the uniform error body',
      );
    });
    return spec;
  }
}
