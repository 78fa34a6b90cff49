import {expect} from '@loopback/testlab';
import {execFile} from 'node:child_process';
import {cp, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {promisify} from 'node:util';
import {generateClient} from '../../client-generation/client-generator';
import {listFiles} from '../../client-generation/directory-diff';
import {PROJECT_ROOT} from '../../config';
import {describeApi} from '../../openapi/api-document';
import {RESOURCES} from '../../resources';

const CLI = path.resolve(__dirname, '../../client-generation/client-cli.js');
const CRUD = ['find', 'findById', 'create', 'updateById', 'deleteById'];

/** Public method names of a generated service class, in file order. */
function methodsOf(source: string): string[] {
  return [...source.matchAll(/^ {2}(\w+(?:\$\w+)*)\(/gm)]
    .map(match => match[1])
    .filter(name => name !== 'constructor');
}

describe('client generation', () => {
  let workDir: string;
  let clientDir: string;
  const read = (file: string) => readFile(path.join(clientDir, file), 'utf8');

  before(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), 'client-generation-'));
    clientDir = path.join(workDir, 'client');
    await generateClient(await describeApi(), clientDir);
  });
  after(() => rm(workDir, {recursive: true, force: true}));

  /** Custom operations that live beside a resource's CRUD methods. */
  const CUSTOM: Record<string, string[]> = {
    Scheduler: [
      'findExecutions',
      'nextRuns',
      'preview',
      'run',
      'bulk',
      'backfill',
    ],
    FailedTask: ['redrive'],
    Calendar: ['importICalendar'],
    // The caller's own inbox: the console's unread badge and mark-all-read.
    Notification: ['unreadCount', 'readAll'],
    // Its create is hand-written: the secret is shown once in the answer.
    HttpTarget: ['create', 'rotateSecret'],
    // The same, and its delivery log and test ping.
    Webhook: ['create', 'rotateSecret', 'deliveries', 'test'],
    // One variant per response content type of POST /reports/generate.
    Report: [
      'generate$Csv',
      'generate$Json',
      'generate$Pdf',
      'generate$VndOpenxmlformatsOfficedocumentSpreadsheetmlSheet',
    ],
  };

  it('generates one <Model>Service per resource with the five CRUD methods and their $Response variants', async () => {
    for (const {model, access} of RESOURCES) {
      const file = `services/${model.modelName
        .replace(/([a-z])([A-Z])/g, '$1-$2')
        .toLowerCase()}.service.ts`;
      const source = await read(file);
      expect(source).to.match(
        new RegExp(`export class ${model.modelName}Service extends`),
      );
      const offered = CRUD.filter(
        name =>
          ({
            find: true,
            findById: true,
            create: !!access.create,
            updateById: !!access.update,
            deleteById: !!access.delete,
          })[name],
      );
      expect(methodsOf(source).sort()).to.deepEqual(
        [...offered, ...(CUSTOM[model.modelName] ?? [])]
          .flatMap(name => [name, `${name}$Response`])
          .sort(),
      );
    }
  });

  it('generates the custom operations under their controllers: AuthService (login, sessions, me), PingService.ping', async () => {
    expect(methodsOf(await read('services/auth.service.ts'))).to.deepEqual([
      'login$Response',
      'login',
      'logout$Response',
      'logout',
      'logoutAll$Response',
      'logoutAll',
      'me$Response',
      'me',
      'changePassword$Response',
      'changePassword',
    ]);
    expect(methodsOf(await read('services/ping.service.ts'))).to.deepEqual([
      'ping$Response',
      'ping',
    ]);
  });

  it('exports a model for every schema of the document, the error body included', async () => {
    const document = await describeApi();
    const index = await read('models.ts');
    for (const schema of Object.keys(document.components!.schemas!)) {
      const exported = schema.replace('.', '');
      expect(index).to.match(new RegExp(`\\b${exported} }`));
    }
    expect(index).to.match(/\bErrorResponse }/);
  });

  it('sends the find filter JSON-encoded, as LoopBack reads it', async () => {
    const find = await read('fn/scheduler/find.ts');

    expect(find).to.match(/filter\?: SchedulerFilter;/);
    expect(find).to.match(/JSON\.stringify\(params\.filter\)/);
  });

  it('defaults the root URL to the API base path on the same origin', async () => {
    expect(await read('api-configuration.ts')).to.match(
      /rootUrl: string = '\/api';/,
    );
  });

  it('writes a README that says the folder is generated and how to regenerate it', async () => {
    const readme = await read('README.md');

    expect(readme).to.match(/Never edit this folder by hand/);
    expect(readme).to.match(/npm run client:generate/);
  });

  it('generates byte-identical output every time', async () => {
    const again = path.join(workDir, 'again');
    await generateClient(await describeApi(), again);

    const first = await listFiles(clientDir);
    expect(await listFiles(again)).to.deepEqual(first);
    for (const file of first) {
      expect(await readFile(path.join(again, file), 'utf8')).to.equal(
        await read(file),
      );
    }
  });

  describe('freshness check (client-cli check)', () => {
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, [CLI, ...args], {
        cwd: PROJECT_ROOT,
      }).then(
        ({stdout, stderr}) => ({code: 0, stdout, stderr}),
        (error: {code: number; stdout: string; stderr: string}) => error,
      );

    it('passes for a client that matches the API', async () => {
      const result = await run('check', clientDir);

      expect(result.code).to.equal(0);
      expect(result.stdout).to.match(/matches the API/);
    });

    it('fails naming every file that drifted, and how to fix it', async () => {
      const drifted = path.join(workDir, 'drifted');
      await cp(clientDir, drifted, {recursive: true});
      await writeFile(
        path.join(drifted, 'services/ticket.service.ts'),
        '// edited by hand\n',
      );
      await rm(path.join(drifted, 'models/error-response.ts'));
      await writeFile(path.join(drifted, 'models/retired.ts'), '');

      const result = await run('check', drifted);

      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(
        /modified: .*services\/ticket\.service\.ts/,
      );
      expect(result.stderr).to.match(/missing: +.*models\/error-response\.ts/);
      expect(result.stderr).to.match(/stale: +.*models\/retired\.ts/);
      expect(result.stderr).to.match(/npm run client:generate/);
    });
  });
});
