import SwaggerParser from '@apidevtools/swagger-parser';
import type {
  OpenApiSpec,
  ParameterObject,
  RequestBodyObject,
} from '@loopback/rest';
import type {JsonSchema} from './schema-arbitrary';

/** One query or path parameter as the document describes it. */
export interface FuzzParameter {
  name: string;
  in: 'path' | 'query';
  schema: JsonSchema;
  /** Sent as JSON text (LoopBack's `filter`), not as a plain value. */
  json: boolean;
}

/** Everything the generator needs to know about one operation. */
export interface FuzzOperation {
  id: string;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  parameters: FuzzParameter[];
  body?: {schema: JsonSchema; required: boolean};
  /** The model's own schema, for `where` values of a list filter. */
  modelSchema?: JsonSchema;
}

export interface ApiDescription {
  operations: FuzzOperation[];
  errorSchema: JsonSchema;
}

const METHODS = ['get', 'post', 'patch', 'put', 'delete'] as const;

function parameterOf(raw: ParameterObject): FuzzParameter {
  const content = raw.content?.['application/json'];
  return {
    name: raw.name,
    in: raw.in as 'path' | 'query',
    schema: (content?.schema ?? raw.schema ?? {}) as JsonSchema,
    json: content !== undefined,
  };
}

/** `Scheduler.Filter` names its model `Scheduler`. */
function modelOfFilter(
  parameters: FuzzParameter[],
  schemas: Record<string, unknown>,
): JsonSchema | undefined {
  const filter = parameters.find(p => p.json);
  const title = filter?.schema.title;
  if (!title?.endsWith('.Filter')) return undefined;
  return schemas[title.slice(0, -'.Filter'.length)] as JsonSchema | undefined;
}

/**
 * Reads the service's own OpenAPI document (as served at /openapi.json) into
 * operations with every `$ref` resolved, so the fuzzer covers exactly what the
 * service says it offers, and nothing it had to be told by hand.
 */
export async function describeOperations(
  document: object,
): Promise<ApiDescription> {
  const copy = structuredClone(document) as OpenApiSpec;
  const resolved = (await SwaggerParser.dereference(
    copy as never,
  )) as OpenApiSpec;
  const schemas = (resolved.components?.schemas ?? {}) as Record<
    string,
    unknown
  >;
  const operations: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(resolved.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item?.[method];
      if (!operation) continue;
      // Headers (X-Change-Reason) are the request's, not the fuzzer's to vary.
      const parameters = ((operation.parameters ?? []) as ParameterObject[])
        .filter(raw => raw.in !== 'header')
        .map(parameterOf);
      const requestBody = operation.requestBody as
        RequestBodyObject | undefined;
      const bodySchema = requestBody?.content['application/json']?.schema;
      operations.push({
        id: operation.operationId ?? `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase() as FuzzOperation['method'],
        path,
        parameters,
        ...(bodySchema
          ? {
              body: {
                schema: bodySchema as JsonSchema,
                required: requestBody?.required ?? false,
              },
            }
          : {}),
        modelSchema: modelOfFilter(parameters, schemas),
      });
    }
  }
  const errorSchema = schemas.ErrorResponse as JsonSchema | undefined;
  if (!errorSchema) {
    throw new Error('The OpenAPI document has no ErrorResponse schema');
  }
  return {operations, errorSchema};
}
