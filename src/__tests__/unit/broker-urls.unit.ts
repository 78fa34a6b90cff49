import {expect} from '@loopback/testlab';
import {loadConfig} from '../../config';
import {connectOrder, parseBrokerUrls} from '../../queue/broker-urls';
import {describeAmqpUrl} from '../../queue/amqp-connection';

describe('AMQP_URL as a list of cluster nodes', () => {
  it('reads one URL or several, comma-separated', () => {
    expect(parseBrokerUrls('amqp://a:5672')).to.deepEqual(['amqp://a:5672']);
    expect(
      parseBrokerUrls('amqp://u:p@a:5672/v, amqps://u:p@b:5671/v'),
    ).to.deepEqual(['amqp://u:p@a:5672/v', 'amqps://u:p@b:5671/v']);
  });

  it('refuses an empty item, a non-URL and another scheme, without echoing secrets', () => {
    for (const raw of [
      'amqp://a:5672,',
      ',amqp://a',
      'amqp://u:secret@a,not a url',
      'amqp://a,http://u:secret@b',
    ]) {
      expect(() => loadConfig({AMQP_URL: raw})).to.throw(/AMQP_URL/);
      try {
        loadConfig({AMQP_URL: raw});
      } catch (error) {
        expect((error as Error).message).to.not.match(/secret/);
      }
    }
  });

  it('shuffles the nodes so a fleet spreads, keeping every node once', () => {
    const nodes = ['amqp://a', 'amqp://b', 'amqp://c', 'amqp://d'];
    const orders = new Set<string>();
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    for (let i = 0; i < 50; i++) {
      const order = connectOrder(nodes, random);
      expect([...order].sort()).to.deepEqual(nodes);
      orders.add(order.join());
    }
    expect(orders.size).to.be.greaterThan(5);
  });

  it('describes a list without its credentials', () => {
    expect(
      describeAmqpUrl('amqp://u:secret@a:5672/v,amqp://u:secret@b:5672/v'),
    ).to.equal('amqp://a:5672/v,amqp://b:5672/v');
  });

  it('reads AMQP_QUEUE_TYPE, quorum by default', () => {
    expect(loadConfig({}).amqpQueueType).to.equal('quorum');
    expect(loadConfig({AMQP_QUEUE_TYPE: 'classic'}).amqpQueueType).to.equal(
      'classic',
    );
    expect(() => loadConfig({AMQP_QUEUE_TYPE: 'stream'})).to.throw(
      /AMQP_QUEUE_TYPE/,
    );
  });
});
