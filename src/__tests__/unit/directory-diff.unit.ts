import {expect} from '@loopback/testlab';
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {describeDrift} from '../../client-generation/client-cli';
import {
  diffDirectories,
  isSame,
  listFiles,
} from '../../client-generation/directory-diff';

async function givenTree(
  root: string,
  files: Record<string, string>,
): Promise<string> {
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, file)), {recursive: true});
    await writeFile(path.join(root, file), content);
  }
  return root;
}

describe('diffDirectories', () => {
  let workDir: string;
  beforeEach(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), 'directory-diff-'));
  });
  afterEach(() => rm(workDir, {recursive: true, force: true}));

  const generated = {
    'README.md': '# Generated',
    'services.ts': 'export {};',
    'services/ticket.service.ts': 'class TicketService {}',
    'models/ticket.ts': 'interface Ticket {}',
  };

  it('finds no difference between identical trees', async () => {
    const expected = await givenTree(path.join(workDir, 'a'), generated);
    const actual = await givenTree(path.join(workDir, 'b'), generated);

    const diff = await diffDirectories(expected, actual);

    expect(diff).to.deepEqual({modified: [], missing: [], stale: []});
    expect(isSame(diff)).to.be.true();
  });

  it('names modified, missing and stale files by their relative paths', async () => {
    const expected = await givenTree(path.join(workDir, 'a'), generated);
    const withoutTicket = Object.fromEntries(
      Object.entries(generated).filter(([file]) => file !== 'models/ticket.ts'),
    );
    const actual = await givenTree(path.join(workDir, 'b'), {
      ...withoutTicket,
      'services/ticket.service.ts': 'class TicketService { edited() {} }',
      'models/old.ts': 'interface Old {}',
    });

    const diff = await diffDirectories(expected, actual);

    expect(diff).to.deepEqual({
      modified: ['services/ticket.service.ts'],
      missing: ['models/ticket.ts'],
      stale: ['models/old.ts'],
    });
    expect(isSame(diff)).to.be.false();
  });

  it('treats an absent folder as empty: every expected file is missing', async () => {
    const expected = await givenTree(path.join(workDir, 'a'), generated);

    const diff = await diffDirectories(expected, path.join(workDir, 'none'));

    expect(diff.missing).to.deepEqual(await listFiles(expected));
    expect(diff.missing).to.have.length(4);
  });

  it('describes drift one file per line, with the command that fixes it', () => {
    const text = describeDrift('client', {
      modified: ['services/ticket.service.ts'],
      missing: ['models/ticket.ts'],
      stale: ['models/old.ts'],
    });

    expect(text.split('\n')).to.deepEqual([
      'client differs from the client generated from the API (3 files):',
      '  modified: client/services/ticket.service.ts',
      '  missing:  client/models/ticket.ts',
      '  stale:    client/models/old.ts',
      'Run `npm run client:generate` and commit client.',
    ]);
  });
});
