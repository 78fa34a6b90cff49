import {expect} from '@loopback/testlab';
import {readdirSync} from 'node:fs';
import path from 'node:path';
import {PROJECT_ROOT} from '../../config';
import {readProjectFile} from '../fixtures/compose-files';

const SRC = path.join(PROJECT_ROOT, 'src');
const sourceFiles = (folder: string): string[] =>
  readdirSync(path.join(SRC, folder), {withFileTypes: true}).flatMap(entry =>
    entry.isDirectory()
      ? sourceFiles(path.join(folder, entry.name))
      : entry.name.endsWith('.ts')
        ? [path.join(folder, entry.name)]
        : [],
  );

/** Names that explain themselves (issue 19): the layout docs/architecture.md describes. */
describe('source layout', () => {
  it('keeps only the entry points and the LoopBack application at the top of src/', () => {
    const loose = readdirSync(SRC).filter(name => name.endsWith('.ts'));
    expect(loose.sort()).to.eql([
      'application.ts',
      'healthcheck.ts',
      'index.ts',
      'keys.ts',
      'migrate.ts',
    ]);
  });

  it('has one module named roles: the user access rules, not the process modes', () => {
    const roles = sourceFiles('.').filter(
      file =>
        !file.startsWith('__tests__') && path.basename(file) === 'roles.ts',
    );
    expect(roles).to.eql(['auth/roles.ts']);
  });

  it('keeps the models free of auth/', () => {
    const offenders = sourceFiles('models').filter(file =>
      /from '\.\.\/auth\//.test(readProjectFile(path.join('src', file))),
    );
    expect(offenders).to.eql([]);
  });

  it('names every folder of src/ in the architecture guide', () => {
    const guide = readProjectFile('docs/architecture.md');
    const folders = readdirSync(SRC, {withFileTypes: true})
      .filter(entry => entry.isDirectory())
      .map(entry => `src/${entry.name}/`);
    expect(folders.filter(folder => !guide.includes(`\`${folder}\``))).to.eql(
      [],
    );
  });
});
