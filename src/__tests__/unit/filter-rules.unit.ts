import type {Filter} from '@loopback/repository';
import {expect} from '@loopback/testlab';
import {
  boundedFilter,
  MAX_PAGE_LIMIT,
  tieBrokenOrder,
} from '../../validation/filter-rules';

const PROPERTIES = {
  all: new Set(['id', 'description', 'status']),
  texts: new Set(['description']),
};

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

  it('passes order clauses on as it checked them: trimmed, one space before the direction (review: " id DESC" passed the check, then juggler answered 400)', () => {
    // A query string's order arrives as one string, not the typed list.
    const asSent = ' id DESC' as unknown as string[];
    expect(boundedFilter({order: asSent}, PROPERTIES).order).to.equal(
      'id DESC',
    );
    expect(
      boundedFilter({order: ['id \t  desc ', '\ndescription']}, PROPERTIES)
        .order,
    ).to.deepEqual(['id desc', 'description']);
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

describe('boundedFilter on date fields (found by the API fuzzer)', () => {
  const DATES = new Set(['created_at']);
  const properties = {
    all: new Set([...PROPERTIES.all, 'created_at']),
    dates: DATES,
  };

  function dateDetails(where: object) {
    try {
      boundedFilter({where}, properties);
    } catch (error) {
      return (error as {details: Array<{path: string; code: string}>}).details;
    }
    return [];
  }

  it('refuses operands that are no date, directly, per operator and in lists', () => {
    expect(dateDetails({created_at: '72476998'})).to.containDeep([
      {path: '/filter/where/created_at', code: 'date'},
    ]);
    expect(dateDetails({created_at: {gt: 'soon'}})).to.containDeep([
      {path: '/filter/where/created_at/gt', code: 'date'},
    ]);
    expect(
      dateDetails({or: [{created_at: {inq: ['2027-01-01T00:00:00Z', {}]}}]}),
    ).to.containDeep([
      {path: '/filter/where/or/0/created_at/inq', code: 'date'},
    ]);
  });

  it('keeps dates, epoch milliseconds and null operands', () => {
    expect(
      dateDetails({
        created_at: {
          between: ['2027-01-01T00:00:00Z', 1800000000000],
          neq: null,
        },
      }),
    ).to.be.empty();
    expect(dateDetails({description: '72476998'})).to.be.empty();
  });
});

describe('boundedFilter on regexp (was 500 from PostgreSQL or juggler)', () => {
  it('refuses regexp on a field that is not text, naming field and operator', () => {
    expect(detailsOf({where: {id: {regexp: '^1'}}})).to.containDeep([
      {path: '/filter/where/id/regexp', code: 'type'},
    ]);
  });

  it('refuses a /…/ literal JavaScript cannot compile', () => {
    expect(detailsOf({where: {description: {regexp: '/a(/'}}})).to.containDeep([
      {path: '/filter/where/description/regexp', code: 'type'},
    ]);
  });

  it('takes regexp on a text field, slashed or not', () => {
    for (const regexp of ['^a(', '/^a/i', 'x']) {
      expect(
        boundedFilter({where: {description: {regexp}}}, PROPERTIES).where,
      ).to.deepEqual({description: {regexp}});
    }
  });
});

describe('tieBrokenOrder', () => {
  it('ends an order without the id with "id ASC", so pages of equal values neither repeat nor skip rows', () => {
    expect(tieBrokenOrder('status DESC', 'id')).to.deepEqual([
      'status DESC',
      'id ASC',
    ]);
    expect(tieBrokenOrder(['status', 'description ASC'], 'id')).to.deepEqual([
      'status',
      'description ASC',
      'id ASC',
    ]);
  });

  it('leaves an order that already names the id as it is', () => {
    expect(tieBrokenOrder('id DESC', 'id')).to.deepEqual(['id DESC']);
    expect(tieBrokenOrder(['status', 'id desc'], 'id')).to.deepEqual([
      'status',
      'id desc',
    ]);
  });
});
