import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {describeApi} from '../openapi/api-document';
import {
  generateClient,
  prepareForClient,
  readGeneratorConfig,
} from './client-generator';
import {
  diffDirectories,
  DirectoryDiff,
  isSame,
  listFiles,
} from './directory-diff';

/** Rewrites the client folder from the application's OpenAPI document. */
export async function regenerateClient(
  clientDir = readGeneratorConfig().output,
): Promise<string[]> {
  const config = readGeneratorConfig();
  const document = await describeApi();
  // The generator's input, kept for inspection (ng-openapi-gen.json names it).
  await mkdir(path.dirname(config.input), {recursive: true});
  await writeFile(
    config.input,
    JSON.stringify(prepareForClient(document), null, 2),
  );
  await generateClient(document, clientDir, config);
  return listFiles(clientDir);
}

/** How the client folder differs from a fresh generation in a temporary folder. */
export async function checkClient(
  clientDir = readGeneratorConfig().output,
): Promise<DirectoryDiff> {
  const fresh = await mkdtemp(path.join(os.tmpdir(), 'client-check-'));
  try {
    await generateClient(await describeApi(), fresh, readGeneratorConfig());
    return await diffDirectories(fresh, clientDir);
  } finally {
    await rm(fresh, {recursive: true, force: true});
  }
}

export function describeDrift(folder: string, diff: DirectoryDiff): string {
  const lines = [
    ...diff.modified.map(file => `  modified: ${path.join(folder, file)}`),
    ...diff.missing.map(file => `  missing:  ${path.join(folder, file)}`),
    ...diff.stale.map(file => `  stale:    ${path.join(folder, file)}`),
  ];
  return [
    `${folder} differs from the client generated from the API (${lines.length} ${lines.length === 1 ? 'file' : 'files'}):`,
    ...lines,
    `Run \`npm run client:generate\` and commit ${folder}.`,
  ].join('\n');
}

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * `generate [folder]` rewrites the client; `check [folder]` regenerates into a
 * temporary folder and exits 1, naming the files, when the client differs.
 * The folder defaults to the configured output, client/.
 */
async function main([command, folder]: string[]): Promise<number> {
  const clientDir = path.resolve(folder ?? readGeneratorConfig().output);
  const shown = path.relative(process.cwd(), clientDir) || '.';
  if (command === 'generate') {
    const files = await regenerateClient(clientDir);
    say(`Generated ${shown}: ${files.length} files`);
    return 0;
  }
  if (command === 'check') {
    const diff = await checkClient(clientDir);
    if (isSame(diff)) {
      say(`${shown} matches the API`);
      return 0;
    }
    process.stderr.write(`${describeDrift(shown, diff)}\n`);
    return 1;
  }
  process.stderr.write('usage: client-cli (generate | check) [folder]\n');
  return 2;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    code => process.exit(code),
    error => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exit(1);
    },
  );
}
