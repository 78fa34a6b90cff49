import {expect} from '@loopback/testlab';
import {failureLevel} from '../../logging/request-log';

describe('failureLevel', () => {
  it('is error for 5xx, warn for 401, 403 and 429, info for other 4xx', () => {
    const levels = [400, 401, 403, 404, 413, 422, 429, 431, 500, 502, 503].map(
      status => [status, failureLevel(status)],
    );
    expect(levels).to.deepEqual([
      [400, 'info'],
      [401, 'warn'],
      [403, 'warn'],
      [404, 'info'],
      [413, 'info'],
      [422, 'info'],
      [429, 'warn'],
      [431, 'info'],
      [500, 'error'],
      [502, 'error'],
      [503, 'error'],
    ]);
  });
});
