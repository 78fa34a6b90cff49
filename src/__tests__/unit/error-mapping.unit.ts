import {HttpErrors} from '@loopback/rest';
import {expect} from '@loopback/testlab';
import {toHttpError} from '../../middleware/error-mapping';

describe('toHttpError', () => {
  it('keeps the status and message of client errors, with the standard name', () => {
    expect(
      toHttpError(new HttpErrors.NotFound('no such scheduler')),
    ).to.deepEqual({
      statusCode: 404,
      name: 'NotFoundError',
      message: 'no such scheduler',
    });
  });

  it('names a 403 ForbiddenError even when the thrower called it Error', () => {
    const error = Object.assign(new Error('Access denied'), {statusCode: 403});
    expect(toHttpError(error)).to.containDeep({
      statusCode: 403,
      name: 'ForbiddenError',
    });
  });

  it('maps a body-parser syntax error carrying 400 to BadRequestError', () => {
    const error = Object.assign(new SyntaxError('Unexpected token'), {
      statusCode: 400,
    });
    expect(toHttpError(error)).to.containDeep({
      statusCode: 400,
      name: 'BadRequestError',
    });
  });

  it("maps juggler's ENTITY_NOT_FOUND code to 404", () => {
    const error = Object.assign(new Error('Entity not found'), {
      code: 'ENTITY_NOT_FOUND',
    });
    expect(toHttpError(error).statusCode).to.equal(404);
  });

  it('names the unknown field of an additionalProperties failure in its path', () => {
    const error = Object.assign(new HttpErrors.UnprocessableEntity('invalid'), {
      details: [
        {
          path: '',
          code: 'additionalProperties',
          message: 'must NOT have additional properties',
          info: {additionalProperty: 'colour'},
        },
        {
          path: '',
          code: 'required',
          message: 'x',
          info: {missingProperty: 'description'},
        },
      ],
    });
    expect(toHttpError(error).details).to.containDeep([
      {path: '/colour', message: 'unknown field "colour"'},
      {path: '/description', message: '"description" is required'},
    ]);
  });

  it('hides everything about unexpected errors behind a 500', () => {
    const body = toHttpError(new Error('password=hunter2 at db.internal:5432'));
    expect(body).to.deepEqual({
      statusCode: 500,
      name: 'InternalServerError',
      message: 'Internal Server Error',
    });
  });

  it('treats non-Error throwables as 500', () => {
    expect(toHttpError('boom').statusCode).to.equal(500);
    expect(toHttpError(undefined).statusCode).to.equal(500);
  });

  it('maps a 5xx status to its reason phrase, never the error text', () => {
    const error = Object.assign(new Error('upstream said no: secret'), {
      statusCode: 503,
    });
    expect(toHttpError(error)).to.deepEqual({
      statusCode: 503,
      name: 'ServiceUnavailableError',
      message: 'Service Unavailable',
    });
  });

  it('maps every PostgreSQL data exception (class 22) to 422, found by the API fuzzer', () => {
    for (const code of ['22009', '22025', '2201B', '22021']) {
      const error = Object.assign(
        new Error('time zone displacement out of range'),
        {
          code,
        },
      );
      expect(toHttpError(error)).to.deepEqual({
        statusCode: 422,
        name: 'UnprocessableEntityError',
        message: 'A value is not valid for its field',
      });
    }
  });

  it('answers 503 for a statement cancelled by statement_timeout (57014)', () => {
    const error = Object.assign(
      new Error('canceling statement due to statement timeout'),
      {code: '57014'},
    );
    expect(toHttpError(error)).to.containDeep({
      statusCode: 503,
      name: 'ServiceUnavailableError',
    });
  });

  it('keeps other PostgreSQL errors and look-alike codes a hidden 500', () => {
    for (const code of ['42P01', '53300', '57P01', '22', 'x22009']) {
      const error = Object.assign(new Error('relation does not exist'), {code});
      expect(toHttpError(error).statusCode).to.equal(500);
    }
  });

  it('keeps the message of a 503 raised on purpose (expose), and of no other server error', () => {
    const busy = Object.assign(
      new HttpErrors.ServiceUnavailable('too many calendar imports'),
      {expose: true},
    );
    expect(toHttpError(busy).message).to.equal('too many calendar imports');
    expect(
      toHttpError(new HttpErrors.ServiceUnavailable('db.internal down'))
        .message,
    ).to.equal('Service Unavailable');
    expect(
      toHttpError(
        Object.assign(new Error('secret'), {statusCode: 500, expose: true}),
      ).message,
    ).to.equal('Internal Server Error');
  });
});
