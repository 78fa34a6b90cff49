import SwaggerParser from '@apidevtools/swagger-parser';
import type {OpenApiSpec, ResponseObject} from '@loopback/rest';
import {expect} from '@loopback/testlab';
import {describeApi} from '../../openapi/api-document';
import {forEachOperation} from '../../openapi/operations';
import {asUser, givenTeam} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {truncateAll} from '../fixtures/test-database';

const ERROR_REF = {$ref: '#/components/schemas/ErrorResponse'};

type SchemaLike = {items?: {properties?: object}};

describe('OpenAPI document for client generators', () => {
  let given: TestApp;
  let served: OpenApiSpec;
  before(async () => {
    given = await givenRunningApp();
    served = (await given.client.get('/api/openapi.json').expect(200)).body;
  });
  after(() => given.app.stop());

  it('is the served document, with the base path as its server, built without starting the app', async () => {
    const described = await describeApi();

    expect(described.servers).to.deepEqual([{url: '/api'}]);
    expect({...described, servers: served.servers}).to.deepEqual(served);
    await SwaggerParser.validate(JSON.parse(JSON.stringify(described)));
  });

  it('documents the uniform error body as ErrorResponse', () => {
    const schema = served.components!.schemas!.ErrorResponse as {
      required: string[];
      properties: {error: {required: string[]}};
    };

    expect(schema.required).to.deepEqual(['error']);
    expect(schema.properties.error.required).to.deepEqual([
      'statusCode',
      'name',
      'message',
    ]);
  });

  it('points every error response, and every default response, at ErrorResponse', () => {
    const errorResponses: Array<[string, ResponseObject]> = [];
    forEachOperation(served, (operation, path) => {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!/^2/.test(status)) {
          errorResponses.push([`${path} ${status}`, response]);
        }
      }
      expect(operation.responses).to.have.property('default');
    });

    expect(errorResponses.length).to.be.above(20);
    for (const [where, response] of errorResponses) {
      expect({
        where,
        schema: response.content?.['application/json'].schema,
      }).to.deepEqual({where, schema: ERROR_REF});
    }
  });

  it('lists 404 on every operation on one record and 422 on every write with a body', () => {
    const missing: string[] = [];
    forEachOperation(served, (operation, path) => {
      const statuses = Object.keys(operation.responses);
      const name = `${operation['x-operation-name']} ${path}`;
      if (/\{id\}/.test(path) && !statuses.includes('404')) {
        missing.push(`${name}: 404`);
      }
      const writes = ['create', 'updateById'];
      if (writes.includes(operation['x-operation-name'])) {
        if (!statuses.includes('422')) missing.push(`${name}: 422`);
      }
    });
    expect(missing).to.deepEqual([]);
  });

  it('describes the body that a failed request really carries', async () => {
    await truncateAll();
    const {operator} = await givenTeam(given.app);
    const res = await asUser(given.client, operator)
      .post('/api/schedulers')
      .send({description: 'x', schedule: 'not cron', report_id: 1});
    const error = (
      served.components!.schemas!.ErrorResponse as {
        properties: {error: {properties: Record<string, SchemaLike>}};
      }
    ).properties.error.properties;

    expect(res.status).to.equal(422);
    expect(Object.keys(res.body)).to.deepEqual(['error']);
    expect(Object.keys(error)).to.containDeep(Object.keys(res.body.error));
    expect(Object.keys(error.details.items!.properties!)).to.containDeep(
      Object.keys(res.body.error.details[0]),
    );
  });

  it('names the user record User, without its password hash', () => {
    const users = served.paths['/users'].get.responses['200'].content[
      'application/json'
    ].schema as {items: {$ref: string}};

    expect(users.items).to.deepEqual({$ref: '#/components/schemas/User'});
    const user = served.components!.schemas!.User as {properties: object};
    expect(Object.keys(user.properties)).to.not.containEql('password_hash');
  });
});
