import {expect} from '@loopback/testlab';
import Ajv from 'ajv';
import fc from 'fast-check';
import {describeApi} from '../../openapi/api-document';
import {ApiDescription, describeOperations} from '../fuzz/api-operations';
import {FILTER_OPERATORS} from '../../validation/filter-rules';
import {bodyFor} from '../fuzz/body-arbitrary';
import {filterSweep, SWEEP_OPERANDS} from '../fuzz/filter-sweep';
import {RecordPool, resourceOf} from '../fuzz/record-pool';
import {FuzzRequest, fuzzRequest} from '../fuzz/request-arbitrary';
import {answerChecker, confirmSlowness} from '../fuzz/response-checks';

const KEYS = ['fuzz.a'];

describe('API fuzzer generators', () => {
  let api: ApiDescription;
  before(async () => {
    api = await describeOperations(await describeApi());
  });

  it('reads every operation of the OpenAPI document, bodies and filters included', () => {
    expect(api.operations.length).to.be.above(50);
    const create = api.operations.find(
      op => op.id === 'SchedulerController.create',
    )!;
    expect(create.body?.schema.required).to.containEql('description');
    const find = api.operations.find(
      op => op.id === 'SchedulerController.find',
    )!;
    expect(find.parameters).to.containDeep([{name: 'filter', json: true}]);
    expect(find.modelSchema?.properties).to.have.property('created_at');
  });

  it('makes the same requests from the same seed, others from another', () => {
    const sample = (seed: number) =>
      fc.sample(fuzzRequest(api.operations, KEYS), {seed, numRuns: 200});
    expect(sample(42)).to.deepEqual(sample(42));
    expect(sample(43)).to.not.deepEqual(sample(42));
  });

  it('reaches every operation and every kind of caller', () => {
    const requests = fc.sample(fuzzRequest(api.operations, KEYS), {
      seed: 7,
      numRuns: 3000,
    });
    expect(new Set(requests.map(r => r.operation)).size).to.equal(
      api.operations.length,
    );
    expect(new Set(requests.map(r => r.auth)).size).to.equal(6);
  });

  it('makes "valid" bodies that the operation schema accepts', () => {
    const ajv = new Ajv({strict: false, validateFormats: false});
    for (const operation of api.operations.filter(op => op.body)) {
      const validate = ajv.compile(operation.body!.schema);
      const bodies = fc
        .sample(bodyFor(operation), {seed: 1, numRuns: 300})
        .filter(body => body?.kind === 'valid');
      expect(bodies.length).to.be.above(0);
      for (const body of bodies) {
        const value = JSON.parse(body!.text);
        expect({
          operation: operation.id,
          valid: validate(value),
          value,
        }).to.containDeep({
          valid: true,
        });
      }
    }
  });

  it('makes hostile bodies too: prototype keys, malformed and oversized ones', () => {
    const create = api.operations.find(
      op => op.id === 'SchedulerController.create',
    )!;
    const bodies = fc.sample(bodyFor(create), {seed: 3, numRuns: 2000});
    const kinds = new Set(bodies.map(body => body?.kind ?? 'none'));
    for (const kind of [
      'prototype-keys',
      'malformed',
      'oversized',
      'wrong-field',
      'missing-field',
      'none',
    ]) {
      expect(kinds.has(kind)).to.be.true();
    }
    expect(
      bodies.some(body => body?.text.includes('"__proto__":')),
    ).to.be.true();
  });
});

describe('API fuzzer answer checks', () => {
  let check: ReturnType<typeof answerChecker>;
  before(async () => {
    check = answerChecker(
      (await describeOperations(await describeApi())).errorSchema,
    );
  });

  const json = 'application/json; charset=utf-8';
  const uniform = (statusCode: number) =>
    JSON.stringify({
      error: {statusCode, name: 'X', message: 'y', request_id: 'r1'},
    });

  it('passes a success and a uniform error answered in time', () => {
    expect(
      check({status: 200, contentType: json, text: '[]', ms: 5}),
    ).to.be.empty();
    expect(
      check({
        status: 404,
        contentType: json,
        text: uniform(404),
        ms: 5,
        requestId: 'r1',
      }),
    ).to.be.empty();
  });

  it('flags an error body whose request_id is not the X-Request-Id answered', () => {
    expect(
      check({
        status: 404,
        contentType: json,
        text: uniform(404),
        ms: 5,
        requestId: 'r2',
      }),
    ).to.deepEqual(['error.request_id r1 differs from X-Request-Id r2']);
  });

  it('flags 5xx, slow answers and error bodies that are not uniform', () => {
    expect(
      check({status: 500, contentType: json, text: uniform(500), ms: 5}),
    ).to.containEql('server error 500');
    expect(
      check({status: 200, contentType: json, text: '[]', ms: 1500})[0],
    ).to.match(/took 1500 ms/);
    expect(check({status: 431, contentType: '', text: '', ms: 1})[0]).to.match(
      /not JSON/,
    );
    expect(
      check({
        status: 400,
        contentType: json,
        text: '{"message":"x"}',
        ms: 1,
      })[0],
    ).to.match(/ErrorResponse/);
    expect(
      check({
        status: 400,
        contentType: json,
        text: uniform(422),
        ms: 1,
        requestId: 'r1',
      })[0],
    ).to.match(/statusCode 422 differs/);
    const withStack = JSON.stringify({
      error: {statusCode: 400, name: 'X', message: 'y', stack: 'at …'},
    });
    expect(
      check({status: 400, contentType: json, text: withStack, ms: 1})[0],
    ).to.match(/extra keys stack/);
  });
});

describe('API fuzzer record pool', () => {
  let pool: RecordPool;
  before(async () => {
    pool = new RecordPool(
      (await describeOperations(await describeApi())).operations,
    );
  });

  const request = (overrides: Record<string, unknown>): FuzzRequest => ({
    operation: 'GroupController.updateById',
    method: 'PATCH',
    path: '/groups/1',
    query: [],
    auth: 'admin',
    body: {
      kind: 'from-record',
      text: '',
      contentType: 'application/json',
      fromRecord: {pick: 3, base: {name: 'base'}, overrides},
    },
  });

  it('names the resource of collection and item paths only', () => {
    expect(resourceOf('/groups')).to.equal('/groups');
    expect(resourceOf('/groups/{id}')).to.equal('/groups');
    expect(resourceOf('/failed-tasks/{id}/redrive')).to.be.undefined();
  });

  it('builds the body from a returned record, keeping only body fields', () => {
    pool.remember(
      {...request({}), operation: 'GroupController.find', method: 'GET'},
      {
        status: 200,
        contentType: 'application/json',
        ms: 1,
        text: JSON.stringify([
          {id: 1, name: 'One', description: 'first', created_at: 'x'},
          {id: 2, name: 'Two', description: null, created_at: 'y'},
        ]),
      },
    );
    const sent = pool.resolve(request({}));
    expect(JSON.parse(sent.body!.text)).to.deepEqual({
      name: 'Two',
      description: null,
    });
    expect(sent.body!.fromRecord).to.be.undefined();
  });

  it('applies an override as an own key, even __proto__', () => {
    const overrides = JSON.parse('{"__proto__": {"polluted": true}}');
    const sent = pool.resolve(request(overrides));
    expect(sent.body!.text).to.match(/"__proto__":\{"polluted":true\}/);
  });
});

describe('API fuzzer filter sweep', () => {
  let api: ApiDescription;
  before(async () => {
    api = await describeOperations(await describeApi());
  });

  const whereOf = (request: FuzzRequest) =>
    (JSON.parse(request.query[0][1]) as {where?: Record<string, unknown>})
      .where;

  it('sweeps every property of every list operation with every operator and every JSON type', () => {
    const requests = filterSweep(api);
    const lists = api.operations.filter(
      op => op.method === 'GET' && op.modelSchema,
    );
    expect(lists.length).to.be.above(10);
    for (const list of lists) {
      const mine = requests.filter(r => r.operation === list.id);
      for (const property of Object.keys(list.modelSchema!.properties!)) {
        const conditions = mine
          .map(whereOf)
          .filter(where => where && property in where)
          .map(where => where![property]);
        for (const operator of FILTER_OPERATORS) {
          const operands = conditions
            .filter(c => c && typeof c === 'object' && operator in c)
            .map(c => (c as Record<string, unknown>)[operator]);
          const types = new Set(
            operands.map(o =>
              o === null ? 'null' : Array.isArray(o) ? 'array' : typeof o,
            ),
          );
          expect({
            list: list.id,
            property,
            operator,
            types: [...types].sort(),
          }).to.deepEqual({
            list: list.id,
            property,
            operator,
            types: ['array', 'boolean', 'null', 'number', 'object', 'string'],
          });
        }
      }
    }
  });

  it('sweeps a column the document gains without the fuzzer being told', () => {
    const copy = structuredClone(api);
    const find = copy.operations.find(op => op.id === 'TicketController.find')!;
    find.modelSchema!.properties!.brand_new = {type: 'integer'};
    const swept = filterSweep(copy).filter(
      r => r.operation === find.id && whereOf(r)?.brand_new !== undefined,
    );
    expect(swept.length).to.equal(
      (FILTER_OPERATORS.length + 1) * SWEEP_OPERANDS.length,
    );
  });
});

describe('API fuzzer slow answers', () => {
  const slow = {
    status: 200,
    contentType: 'application/json',
    text: '',
    ms: 1500,
  };
  const fast = {...slow, ms: 5};
  const tookProblem = ['took 1500 ms (limit 1000 ms)'];

  it('forgives a read that is fast when asked again, and only then', async () => {
    let resent = 0;
    const resend = async () => {
      resent++;
      return fast;
    };
    expect(
      await confirmSlowness(tookProblem, {method: 'GET'}, slow, resend),
    ).to.be.empty();
    expect(resent).to.equal(1);
    const again = await confirmSlowness(
      tookProblem,
      {method: 'GET'},
      slow,
      async () => slow,
    );
    expect(again).to.containEql('asked again: took 1500 ms');
  });

  it('never resends a write that succeeded, nor hides another problem', async () => {
    const neverCalled = async () => {
      throw new Error('resent');
    };
    expect(
      await confirmSlowness(tookProblem, {method: 'POST'}, slow, neverCalled),
    ).to.eql(tookProblem);
    const both = ['server error 500', ...tookProblem];
    expect(
      await confirmSlowness(both, {method: 'GET'}, slow, neverCalled),
    ).to.eql(both);
  });
});
