import {expect} from '@loopback/testlab';
import {EventEmitter} from 'node:events';
import {drainedOrClosed} from '../../queue/task-publisher';

describe('publisher backpressure wait', () => {
  it('resolves on drain and leaves no listener on the channel (the fleet bench saw 11 pile up)', async () => {
    const channel = new EventEmitter();
    for (let i = 0; i < 50; i++) {
      const waiting = drainedOrClosed(channel);
      channel.emit('drain');
      await waiting;
    }
    expect(channel.listenerCount('close')).to.equal(0);
    expect(channel.listenerCount('error')).to.equal(0);
    expect(channel.listenerCount('drain')).to.equal(0);
  });

  it('resolves when the channel closes instead of draining', async () => {
    const channel = new EventEmitter();
    const waiting = drainedOrClosed(channel);
    channel.emit('close');
    await waiting;
    expect(channel.listenerCount('drain')).to.equal(0);
  });
});
