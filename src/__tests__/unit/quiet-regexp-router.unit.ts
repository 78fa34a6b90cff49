import {expect} from '@loopback/testlab';
import {Request, RestRouter, Route} from '@loopback/rest';
import {inspect} from 'node:util';
import {QuietRegExpRouter} from '../../routing/quiet-regexp-router';

describe('QuietRegExpRouter', () => {
  let inspected: number;
  const handler = () => undefined;

  /** An operation spec that counts how often something stringifies it. */
  function countedSpec(operationId: string) {
    return {
      operationId,
      responses: {},
      [inspect.custom]: () => {
        inspected++;
        return operationId;
      },
    };
  }

  function givenRouter(): RestRouter {
    const router = new QuietRegExpRouter();
    for (const [verb, path, id] of [
      ['get', '/schedulers/{id}', 'findById'],
      ['patch', '/schedulers/{id}', 'updateById'],
      ['get', '/schedulers/{id}/executions', 'executions'],
      ['get', '/config/{key}', 'config'],
    ]) {
      router.add(new Route(verb, path, countedSpec(id), handler));
    }
    return router;
  }

  const request = (method: string, path: string) =>
    ({method, path}) as unknown as Request;

  beforeEach(() => (inspected = 0));

  it('finds the route of the verb and path, with its path parameters', () => {
    const found = givenRouter().find(request('PATCH', '/schedulers/4242'));
    expect(found?.spec.operationId).to.equal('updateById');
    expect(found?.pathParams).to.deepEqual({id: '4242'});
    const nested = givenRouter().find(
      request('GET', '/schedulers/7/executions'),
    );
    expect(nested?.spec.operationId).to.equal('executions');
  });

  it('matches segments named like Object.prototype members as plain values', () => {
    const found = givenRouter().find(request('GET', '/config/toString'));
    expect(found?.pathParams).to.deepEqual({key: 'toString'});
    expect(
      givenRouter().find(request('GET', '/constructor/1')),
    ).to.be.undefined();
  });

  it('finds nothing for an unknown verb or path', () => {
    expect(
      givenRouter().find(request('DELETE', '/schedulers/1')),
    ).to.be.undefined();
    expect(givenRouter().find(request('GET', '/nowhere'))).to.be.undefined();
  });

  it('does not stringify the routes it tries', () => {
    const router = givenRouter();
    for (let i = 0; i < 10; i++) {
      router.find(request('GET', '/schedulers/4242/executions'));
    }
    expect(inspected).to.equal(0);
  });
});
