import SwaggerParser from '@apidevtools/swagger-parser';
import {expect} from '@loopback/testlab';
import {givenRunningApp, TestApp} from '../fixtures/test-app';

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
    ]);
    expect(operations).to.have.length(6);
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

  it('serves the API explorer at /api/explorer', async () => {
    const res = await given.client.get('/api/explorer/').expect(200);
    expect(res.text).to.match(/swagger-ui/i);
  });
});
