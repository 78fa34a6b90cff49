import {expect} from '@loopback/testlab';
import {EventEmitter} from 'node:events';
import type {AmqpConnection} from '../../queue/amqp-connection';
import {
  MAX_PUBLISH_CHANNELS,
  splitIntoParts,
  TaskPublisher,
} from '../../queue/task-publisher';
import {LogCapture} from '../fixtures/log-capture';

describe('publish channels', () => {
  it('cuts a batch into consecutive parts, one per channel, none empty', () => {
    const tasks = Array.from({length: 10}, (_, i) => i);
    const parts = splitIntoParts(tasks, 4);
    expect(parts).to.eql([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]);
    expect(splitIntoParts(tasks, 1)).to.eql([tasks]);
  });

  it('gives each channel at least two messages: a small batch uses fewer channels', () => {
    expect(splitIntoParts([1], 4)).to.eql([[1]]);
    expect(splitIntoParts([1, 2, 3], 4)).to.eql([[1, 2, 3]]);
    expect(splitIntoParts([1, 2, 3, 4, 5], 4)).to.eql([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('keeps every task exactly once whatever the sizes', () => {
    for (const length of [2, 7, 31, 64, 1000, 10_001]) {
      for (const channels of [1, 2, 3, 4, MAX_PUBLISH_CHANNELS]) {
        const tasks = Array.from({length}, (_, i) => i);
        const parts = splitIntoParts(tasks, channels);
        expect(parts.length).to.be.within(1, channels);
        expect(parts.every(part => part.length > 0)).to.be.true();
        expect(parts.flat()).to.eql(tasks);
      }
    }
  });

  it('refuses a channel count that is not an integer from 1 to the maximum', () => {
    const connection = new EventEmitter() as unknown as AmqpConnection;
    const {logger} = new LogCapture();
    for (const channels of [0, -1, 1.5, NaN, MAX_PUBLISH_CHANNELS + 1]) {
      expect(
        () => new TaskPublisher(connection, logger, undefined, {channels}),
      ).to.throw(RangeError, {message: /publish channels must be an integer/});
    }
    expect(
      () =>
        new TaskPublisher(connection, logger, undefined, {
          channels: MAX_PUBLISH_CHANNELS,
        }),
    ).not.to.throw();
  });
});
