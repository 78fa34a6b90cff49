import type {Filter} from '@loopback/repository';
import {expect} from '@loopback/testlab';
import {boundedFilter, MAX_PAGE_LIMIT} from '../../validation/filter-rules';

const PROPERTIES = new Set(['id', 'description', 'status']);

function detailsOf(filter: object): Array<{path: string; code: string}> {
  try {
    boundedFilter(filter, PROPERTIES);
  } catch (error) {
    expect((error as {statusCode: number}).statusCode).to.equal(422);
    return (error as {details: Array<{path: string; code: string}>}).details;
  }
  throw new Error(`expected ${JSON.stringify(filter)} to be rejected`);
}

describe('boundedFilter', () => {
  it('defaults the limit to 100', () => {
    expect(boundedFilter(undefined, PROPERTIES)).to.deepEqual({limit: 100});
  });

  it(`caps the limit at ${MAX_PAGE_LIMIT}`, () => {
    expect(boundedFilter({limit: 5000}, PROPERTIES).limit).to.equal(1000);
    expect(boundedFilter({limit: 20}, PROPERTIES).limit).to.equal(20);
  });

  it('keeps known fields, operators and order clauses', () => {
    const filter: Filter = {
      where: {
        and: [{status: true}, {description: {ilike: '%daily%'}}],
        id: {inq: [1, 2]},
      },
      fields: ['id', 'description'],
      order: ['id DESC', 'description'],
      skip: 10,
    };
    expect(boundedFilter(filter, PROPERTIES)).to.deepEqual({
      ...filter,
      limit: 100,
    });
  });

  it('rejects unknown where fields at any depth instead of ignoring them', () => {
    expect(
      detailsOf({where: {nope: 1, or: [{status: true}, {alsoNope: 2}]}}).map(
        d => d.path,
      ),
    ).to.deepEqual(['/filter/where/nope', '/filter/where/or/1/alsoNope']);
  });

  it('rejects unknown operators', () => {
    expect(detailsOf({where: {id: {$where: 'sleep(1)'}}})[0]).to.containDeep({
      path: '/filter/where/id/$where',
      code: 'unknownOperator',
    });
  });

  it('rejects unknown fields in fields and malformed order clauses', () => {
    expect(
      detailsOf({
        fields: {secret: true},
        order: 'description; DROP TABLE scheduler',
      }).map(d => d.code),
    ).to.deepEqual(['unknownField', 'order']);
  });

  it('rejects include, which no relation supports here', () => {
    expect(detailsOf({include: ['executions']})[0].path).to.equal(
      '/filter/include',
    );
  });
});
