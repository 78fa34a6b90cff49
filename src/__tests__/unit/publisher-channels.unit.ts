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
  it('cuts a batch into consecutive parts, one per channel, sizes differing by one at most', () => {
    const tasks = Array.from({length: 10}, (_, i) => i);
    expect(splitIntoParts(tasks, 4)).to.eql([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7],
      [8, 9],
    ]);
    expect(splitIntoParts(tasks, 1)).to.eql([tasks]);
  });

  it('gives each channel at least two messages: a small batch uses fewer channels', () => {
    expect(splitIntoParts([1], 4)).to.eql([[1]]);
    expect(splitIntoParts([1, 2, 3], 4)).to.eql([[1, 2, 3]]);
    expect(splitIntoParts([1, 2, 3, 4, 5], 4)).to.eql([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(splitIntoParts([1, 2, 3, 4, 5, 6, 7], 4)).to.eql([
      [1, 2, 3],
      [4, 5],
      [6, 7],
    ]);
  });

  it('uses as many channels as it can, keeps every task once, and balances the parts', () => {
    for (const length of [2, 3, 7, 9, 16, 17, 31, 33, 64, 1000, 10_001]) {
      for (const channels of [1, 2, 3, 4, 7, 10, MAX_PUBLISH_CHANNELS]) {
        const tasks = Array.from({length}, (_, i) => i);
        const parts = splitIntoParts(tasks, channels);
        const sizes = parts.map(part => part.length);
        expect(parts.length).to.equal(
          Math.min(channels, Math.floor(length / 2)),
        );
        expect(Math.min(...sizes)).to.be.aboveOrEqual(2);
        expect(Math.max(...sizes) - Math.min(...sizes)).to.be.belowOrEqual(1);
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

  it('refuses a confirm timeout that is not a positive number of ms', () => {
    const connection = new EventEmitter() as unknown as AmqpConnection;
    const {logger} = new LogCapture();
    for (const confirmTimeoutMs of [0, -1, NaN]) {
      expect(
        () =>
          new TaskPublisher(connection, logger, undefined, {confirmTimeoutMs}),
      ).to.throw(RangeError, {message: /confirm timeout must be a positive/});
    }
  });
});
