import {expect} from '@loopback/testlab';
import {readdirSync, readFileSync} from 'node:fs';
import path from 'node:path';
import {PROJECT_ROOT} from '../../config';

const read = (file: string) =>
  readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
const guides = readdirSync(path.join(PROJECT_ROOT, 'docs'))
  .filter(name => name.endsWith('.md'))
  .map(name => `docs/${name}`);
const documents = ['README.md', ...guides];
const scripts = Object.keys(
  (JSON.parse(read('package.json')) as {scripts: Record<string, string>})
    .scripts,
);

/** The scripts a text tells its reader to run with `npm run [--silent] X`. */
export function npmRunScripts(text: string): string[] {
  return [...text.matchAll(/npm run (?:--silent )?([a-z][\w:.-]*)/g)].map(
    ([, name]) => name,
  );
}

describe('README and guides (issue 19)', () => {
  it('keeps the README a door: at most 200 lines', () => {
    expect(read('README.md').split('\n').length).to.be.belowOrEqual(201);
  });

  it('links every guide of docs/ from the README', () => {
    const readme = read('README.md');
    expect(guides.length).to.be.above(9);
    const unlinked = guides.filter(guide => !readme.includes(`](${guide})`));
    expect(unlinked).to.deepEqual([]);
  });

  it('names only npm scripts that package.json has', () => {
    const mentioned = documents.flatMap(file =>
      npmRunScripts(read(file)).map(script => ({file, script})),
    );
    expect(mentioned.length).to.be.above(20);
    const unknown = mentioned.filter(({script}) => !scripts.includes(script));
    expect(unknown).to.deepEqual([]);
  });

  it('would notice a script that does not exist (the check can fail)', () => {
    const named = npmRunScripts('run `npm run --silent bench:nothing` first');
    expect(named).to.deepEqual(['bench:nothing']);
    expect(scripts).to.not.containEql('bench:nothing');
  });
});
