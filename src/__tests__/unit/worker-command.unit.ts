import {expect} from '@loopback/testlab';
import {mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {
  resolveWorkerCommand,
  workerCommandProblem,
} from '../../executors/worker-command';

describe('worker commands stay inside WORKERS_DIR', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'workers-'));
    writeFileSync(path.join(dir, 'export.sh'), '#!/bin/sh\n');
    symlinkSync('/bin/sh', path.join(dir, 'escape'));
  });
  after(() => rmSync(dir, {recursive: true, force: true}));

  it('resolves a plain file name inside the folder', () => {
    expect(resolveWorkerCommand(dir, 'export.sh')).to.equal(
      path.join(dir, 'export.sh'),
    );
    expect(workerCommandProblem(dir, 'not-there-yet_v2.1')).to.be.undefined();
  });

  for (const command of [
    '../x',
    '/bin/sh',
    'a/b',
    '.',
    '..',
    '',
    'a b',
    'x;rm -rf /',
    '..\\x',
  ]) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      expect(workerCommandProblem(dir, command)).to.match(/file name/);
      expect(() => resolveWorkerCommand(dir, command)).to.throw(
        /worker command/,
      );
    });
  }

  it('refuses a symbolic link that leads out of the folder', () => {
    expect(workerCommandProblem(dir, 'escape')).to.match(/link that leads out/);
  });
});
