import SwaggerParser from '@apidevtools/swagger-parser';
import {expect} from '@loopback/testlab';
import {existsSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {PROJECT_ROOT} from '../../config';
import {givenRunningApp, TestApp} from '../fixtures/test-app';

const packageJson = JSON.parse(
  readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8'),
) as {version: string; license: string};

type Operation = {
  operationId: string;
  tags?: string[];
  'x-operation-name'?: string;
};

describe('OpenAPI document and explorer', () => {
  let given: TestApp;
  let spec: {paths: Record<string, Record<string, Operation>>};
  before(async () => {
    given = await givenRunningApp();
    spec = (await given.client.get('/api/openapi.json').expect(200)).body;
  });
  after(() => given.app.stop());

  it('serves a valid OpenAPI 3 document at /api/openapi.json', async () => {
    const document = JSON.parse(JSON.stringify(spec));
    await SwaggerParser.validate(document);
    expect(document.openapi).to.match(/^3\./);
  });

  it('describes the scheduler operations with client-friendly names and one tag', () => {
    const operations = Object.entries(spec.paths)
      .filter(([path]) => path.startsWith('/schedulers'))
      .flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({path, method, op})),
      );
    const names = operations.map(({path, method, op}) => [
      method.toUpperCase(),
      path,
      op['x-operation-name'],
      op.tags,
    ]);
    expect(names).to.containDeep([
      ['POST', '/schedulers', 'create', ['Scheduler']],
      ['GET', '/schedulers', 'find', ['Scheduler']],
      ['GET', '/schedulers/{id}', 'findById', ['Scheduler']],
      ['PATCH', '/schedulers/{id}', 'updateById', ['Scheduler']],
      ['DELETE', '/schedulers/{id}', 'deleteById', ['Scheduler']],
      ['GET', '/schedulers/{id}/executions', 'findExecutions', ['Scheduler']],
      ['GET', '/schedulers/{id}/next-runs', 'nextRuns', ['Scheduler']],
      ['POST', '/schedulers/preview', 'preview', ['Scheduler']],
      ['POST', '/schedulers/{id}/run', 'run', ['Scheduler']],
      ['POST', '/schedulers/bulk', 'bulk', ['Scheduler']],
      ['POST', '/schedulers/{id}/backfill', 'backfill', ['Scheduler']],
    ]);
    expect(operations).to.have.length(11);
  });

  it('keeps operationIds unique across the document', () => {
    const ids = Object.values(spec.paths).flatMap(methods =>
      Object.values(methods).map(op => op.operationId),
    );
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('documents the create body with user_id_created and without server-owned fields', () => {
    const schemas = (
      spec as unknown as {
        components: {schemas: Record<string, {properties: object}>};
      }
    ).components.schemas;
    const properties = Object.keys(schemas.NewScheduler.properties);
    expect(properties).to.containEql('user_id_created');
    expect(properties).to.not.containEql('id');
    expect(properties).to.not.containEql('user_id');
  });

  it('points its server at the relative /api base path', () => {
    const servers = (spec as unknown as {servers: Array<{url: string}>})
      .servers;
    expect(servers).to.deepEqual([{url: '/api'}]);
  });

  it('never takes its server from request headers (X-Forwarded-Host, Host)', async () => {
    for (const url of ['/api/openapi.json', '/api/explorer/openapi.json']) {
      const res = await given.client
        .get(url)
        .set('X-Forwarded-Host', 'evil.example')
        .set('X-Forwarded-Proto', 'https')
        .set('Host', 'evil.example')
        .expect(200);
      expect({url, servers: res.body.servers}).to.deepEqual({
        url,
        servers: [{url: '/api'}],
      });
      expect(JSON.stringify(res.body)).to.not.containEql('evil.example');
    }
  });

  describe('for API tooling (spectral:oas, Redocly recommended)', () => {
    type Doc = {
      tags?: Array<{name: string; description?: string}>;
      info: {description?: string; contact?: object; license?: object};
      paths: Record<string, Record<string, FullOperation>>;
      components: {schemas: Record<string, {properties?: object}>};
    };
    type FullOperation = Operation & {
      summary?: string;
      description?: string;
      security?: object[];
      'x-controller-name': string;
      responses: Record<
        string,
        {content?: {'application/json': {schema: {$ref?: string}}}}
      >;
    };
    const operations = () =>
      Object.entries((spec as unknown as Doc).paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, op]) => ({path, method, op})),
      );

    it('gives every operation a summary, a description, a declared tag and explicit security', () => {
      const doc = spec as unknown as Doc;
      const declared = new Map(doc.tags?.map(t => [t.name, t.description]));
      for (const {path, method, op} of operations()) {
        const where = `${method.toUpperCase()} ${path}`;
        expect({
          where,
          summary: !!op.summary,
          description: !!op.description,
        }).to.deepEqual({where, summary: true, description: true});
        for (const tag of op.tags ?? []) {
          expect({where, tag, described: !!declared.get(tag)}).to.deepEqual({
            where,
            tag,
            described: true,
          });
        }
        expect(op.security).to.be.an.Array();
      }
      expect(doc.info.description).to.be.a.String();
      expect(doc.info.contact).to.be.an.Object();
      expect(doc.info.license).to.be.an.Object();
    });

    it('documents 401 on every operation behind a token and 403 where a role may be refused, in the uniform error body', () => {
      const ops = operations();
      for (const {path, method, op} of ops) {
        const where = `${method.toUpperCase()} ${path}`;
        const statuses = Object.keys(op.responses);
        if ((op.security ?? []).length > 0) {
          expect({where, has401: statuses.includes('401')}).to.deepEqual({
            where,
            has401: true,
          });
        }
        for (const [status, response] of Object.entries(op.responses)) {
          if (!/^[45]|default/.test(status)) continue;
          expect({
            where,
            status,
            ref: response.content?.['application/json'].schema.$ref,
          }).to.deepEqual({
            where,
            status,
            ref: '#/components/schemas/ErrorResponse',
          });
        }
      }
      const forbidding = ops.filter(({op}) => '403' in op.responses);
      expect(
        forbidding.map(({method, path}) => `${method} ${path}`),
      ).to.containDeep([
        'post /schedulers',
        'patch /tickets/{id}',
        'get /users',
        'post /reports/generate',
      ]);
      expect(
        ops.find(
          ({method, path}) => method === 'get' && path === '/schedulers',
        )!.op.responses,
      ).to.not.have.property('403');
    });

    it('never lists hidden properties in a filter schema', () => {
      const text = JSON.stringify(
        (spec as unknown as Doc).components.schemas['User.Filter'],
      );
      expect(text).to.not.containEql('password_hash');
      expect(text).to.containEql('email');
    });
  });

  it('serves the API explorer at /api/explorer', async () => {
    const res = await given.client.get('/api/explorer/').expect(200);
    expect(res.text).to.match(/swagger-ui/i);
  });

  describe('names itself (issue 19)', () => {
    type Info = {
      title: string;
      version: string;
      description: string;
      license: {name: string};
    };
    const info = () => (spec as unknown as {info: Info}).info;

    it('has the service title and the version of package.json', () => {
      expect(info().title).to.equal('Task Scheduler API');
      expect(info().version).to.equal(packageJson.version);
    });

    it('links the guides in its description, each one a file that exists', () => {
      const guides = info().description.match(/`[\w/-]+\.md`/g) ?? [];
      expect(guides).to.containDeep(['`README.md`', '`docs/api.md`']);
      for (const guide of guides) {
        const file = guide.slice(1, -1);
        expect({
          file,
          exists: existsSync(join(PROJECT_ROOT, file)),
        }).to.deepEqual({file, exists: true});
      }
    });

    it("states package.json's license", () => {
      expect(info().license).to.deepEqual({name: packageJson.license});
    });

    it('shows the title on the explorer page', async () => {
      const res = await given.client.get('/api/explorer/').expect(200);
      expect(res.text).to.containEql('<title>Task Scheduler API</title>');
      expect(res.text).to.not.containEql('LoopBack API Explorer');
    });

    it('reports the version on GET /api/ping, without a token', async () => {
      const res = await given.client.get('/api/ping').expect(200);
      expect(res.body).to.containDeep({
        status: 'ok',
        version: packageJson.version,
      });
    });
  });
});
