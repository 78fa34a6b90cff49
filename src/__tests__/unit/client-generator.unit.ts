import type {OpenApiSpec} from '@loopback/rest';
import {expect} from '@loopback/testlab';
import {mkdtemp, rm, writeFile} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  JSON_ENCODED,
  prepareForClient,
  readGeneratorConfig,
} from '../../client-generation/client-generator';

const FILTER_SCHEMA = {$ref: '#/components/schemas/Ticket.Filter'};

function givenDocument(): OpenApiSpec {
  return {
    openapi: '3.0.0',
    info: {title: 'test', version: '1'},
    paths: {
      '/tickets': {
        get: {
          operationId: 'TicketController.find',
          'x-operation-name': 'find',
          parameters: [
            {
              name: 'filter',
              in: 'query',
              content: {'application/json': {schema: FILTER_SCHEMA}},
            },
            {name: 'page', in: 'query', schema: {type: 'integer'}},
          ],
          responses: {'200': {description: 'ok'}},
        },
      },
      '/tickets/{id}': {
        get: {
          operationId: 'TicketController.findById',
          'x-operation-name': 'findById',
          parameters: [
            {name: 'id', in: 'path', required: true, schema: {type: 'integer'}},
          ],
          responses: {'200': {description: 'ok'}},
        },
      },
    },
  };
}

describe('prepareForClient', () => {
  it('types a JSON query parameter with its schema and flags it for JSON encoding', () => {
    const prepared = prepareForClient(givenDocument());

    expect(prepared.paths['/tickets'].get.parameters[0]).to.deepEqual({
      name: 'filter',
      in: 'query',
      schema: FILTER_SCHEMA,
      [JSON_ENCODED]: true,
    });
  });

  it('leaves plain parameters, operation names and the input document alone', () => {
    const document = givenDocument();
    const before = structuredClone(document);

    const prepared = prepareForClient(document);

    expect(document).to.deepEqual(before);
    expect(prepared.paths['/tickets'].get.parameters[1]).to.deepEqual(
      before.paths['/tickets'].get.parameters[1],
    );
    expect(prepared.paths['/tickets/{id}']).to.deepEqual(
      before.paths['/tickets/{id}'],
    );
    expect(prepared.paths['/tickets'].get['x-operation-name']).to.equal('find');
  });
});

describe('readGeneratorConfig', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'generator-config-'));
  });
  after(() => rm(dir, {recursive: true, force: true}));

  it('resolves input, output and templates against the file', async () => {
    const file = path.join(dir, 'ng-openapi-gen.json');
    await writeFile(
      file,
      JSON.stringify({
        input: 'dist/doc.json',
        output: 'client',
        templates: 'client-templates',
        services: true,
      }),
    );

    expect(readGeneratorConfig(file)).to.deepEqual({
      input: path.join(dir, 'dist/doc.json'),
      output: path.join(dir, 'client'),
      templates: path.join(dir, 'client-templates'),
      services: true,
    });
  });

  it('reads the committed configuration: services, Observables, every model', () => {
    expect(readGeneratorConfig()).to.containDeep({
      services: true,
      promises: false,
      ignoreUnusedModels: false,
      endOfLineStyle: 'lf',
    });
  });
});
