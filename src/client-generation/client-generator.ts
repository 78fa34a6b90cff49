import type {OpenApiSpec, ParameterObject} from '@loopback/rest';
import {NgOpenApiGen} from 'ng-openapi-gen';
import type {Options} from 'ng-openapi-gen/lib/options';
import {readFileSync} from 'node:fs';
import {writeFile} from 'node:fs/promises';
import path from 'node:path';
import {PROJECT_ROOT} from '../config';
import {forEachOperation} from '../openapi/operations';
import {clientReadme} from './client-readme';

/** The committed generator configuration (ng-openapi-gen's own format). */
export const GENERATOR_CONFIG_FILE = path.join(
  PROJECT_ROOT,
  'ng-openapi-gen.json',
);

/** Flags a query parameter the client sends as one JSON string. */
export const JSON_ENCODED = 'x-json-encoded';

export type GeneratorConfig = Options & {output: string};

/** The configuration file, with its paths made absolute (they are relative to it). */
export function readGeneratorConfig(
  file = GENERATOR_CONFIG_FILE,
): GeneratorConfig {
  const config = JSON.parse(readFileSync(file, 'utf8')) as GeneratorConfig;
  const resolve = (relative: string) =>
    path.resolve(path.dirname(file), relative);
  return {
    ...config,
    input: resolve(config.input),
    output: resolve(config.output),
    ...(config.templates ? {templates: resolve(config.templates)} : {}),
  };
}

/**
 * A copy of the document as the generator needs it. LoopBack declares the
 * `filter` query parameter as JSON content, which ng-openapi-gen would type
 * `any` and explode into `key=value` pairs; the copy gives it the filter
 * schema as its type and flags it for the template that JSON-encodes it.
 * Everything else, including `x-operation-name` (the method names), stays.
 */
export function prepareForClient(document: OpenApiSpec): OpenApiSpec {
  const copy = structuredClone(document);
  forEachOperation(copy, operation => {
    for (const parameter of (operation.parameters ?? []) as ParameterObject[]) {
      const schema = parameter.content?.['application/json']?.schema;
      if (parameter.in !== 'query' || !schema) continue;
      delete parameter.content;
      Object.assign(parameter, {schema, [JSON_ENCODED]: true});
    }
  });
  return copy;
}

export function generatorVersion(): string {
  const manifest = require.resolve('ng-openapi-gen/package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as {version: string})
    .version;
}

/**
 * Writes the whole client into `outDir`: the Angular code ng-openapi-gen
 * generates from `document` with `config`, and the README. Files in `outDir`
 * that the generation does not produce are removed.
 */
export async function generateClient(
  document: OpenApiSpec,
  outDir: string,
  config: GeneratorConfig = readGeneratorConfig(),
): Promise<void> {
  const input = prepareForClient(document);
  const generator = new NgOpenApiGen(
    input as unknown as ConstructorParameters<typeof NgOpenApiGen>[0],
    {...config, output: outDir, silent: true},
  );
  generator.generate();
  await writeFile(
    path.join(outDir, 'README.md'),
    clientReadme(generatorVersion()),
  );
}
