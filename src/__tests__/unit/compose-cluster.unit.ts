import {expect} from '@loopback/testlab';
import {parseBrokerUrls} from '../../queue/broker-urls';
import {
  composeSchema,
  composeValidator,
  interpolatedCompose,
  readProjectFile,
} from '../fixtures/compose-files';

type Service = {
  hostname?: string;
  environment?: Record<string, string>;
  volumes?: string[];
};

const FILE = 'docker-compose.cluster.yml';
const NODES = ['rabbitmq', 'rabbitmq-2', 'rabbitmq-3'];

describe('docker-compose.cluster.yml (the cluster profile)', () => {
  const {services} = interpolatedCompose(FILE) as {
    services: Record<string, Service>;
  };

  it('is a valid Compose file by the compose-spec JSON schema', () => {
    const ajv = composeValidator();
    const valid = ajv.validate(composeSchema(), interpolatedCompose(FILE));
    expect({valid, errors: ajv.errors ?? []}).to.deepEqual({
      valid: true,
      errors: [],
    });
  });

  it('runs three RabbitMQ nodes that name each other in the cluster configuration', () => {
    const conf = readProjectFile('deploy/rabbitmq/cluster.conf');
    for (const node of NODES) {
      expect(services[node].hostname).to.equal(node);
      expect(conf).to.containEql(`= rabbit@${node}\n`);
      expect(services[node].volumes).to.containEql(
        './deploy/rabbitmq/cluster.conf:/etc/rabbitmq/conf.d/20-cluster.conf:ro',
      );
    }
    // A shared cookie, required (no default secret).
    expect(readProjectFile(FILE)).to.containEql('${RABBITMQ_COOKIE:?');
  });

  it('gives every role an AMQP_URL that lists the three nodes', () => {
    for (const role of ['api', 'scheduler', 'worker', 'stay-alive']) {
      const urls = parseBrokerUrls(services[role].environment!.AMQP_URL);
      expect(urls.map(url => new URL(url).hostname)).to.deepEqual(NODES);
    }
  });
});
