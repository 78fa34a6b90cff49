import {ConfigError} from '../config/parsers';

/**
 * AMQP_URL may name several nodes of one RabbitMQ cluster, comma-separated.
 * Each must be an amqp(s) URL with a host; empty items are refused, so a
 * stray comma is a configuration error rather than a silently shorter list.
 */
export function parseBrokerUrls(raw: string, name = 'AMQP_URL'): string[] {
  const items = raw.split(',').map(item => item.trim());
  if (items.some(item => item === '')) {
    throw new ConfigError(
      name,
      'has an empty item in its comma-separated list',
    );
  }
  for (const item of items) {
    let parsed: URL;
    try {
      parsed = new URL(item);
    } catch {
      throw new ConfigError(name, 'holds an item that is not a valid URL');
    }
    if (!['amqp:', 'amqps:'].includes(parsed.protocol) || !parsed.hostname) {
      throw new ConfigError(
        name,
        'must be a URL of the form amqp://host[:port]/... (the nodes of one cluster comma-separated)',
      );
    }
  }
  return items;
}

/**
 * The order a process tries the nodes in: shuffled (Fisher-Yates), so a
 * fleet spreads over the cluster instead of every process on the first node.
 */
export function connectOrder(
  urls: readonly string[],
  random: () => number = Math.random,
): string[] {
  const order = [...urls];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}
