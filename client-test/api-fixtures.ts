import path from 'node:path';
import type * as Security from '../dist/__tests__/fixtures/security';
import type * as TestApp from '../dist/__tests__/fixtures/test-app';
import type * as TestDatabase from '../dist/__tests__/fixtures/test-database';

/** dist/__tests__/fixtures, seen from dist/client-suite/client-test. */
const FIXTURES = path.resolve(__dirname, '../../__tests__/fixtures');

/**
 * The service's own test fixtures, loaded from its build by path: the same
 * modules mocha's root hooks loaded, so this suite runs against the database
 * they created for the run.
 */
export async function loadApiFixtures() {
  const load = (name: string) => import(path.join(FIXTURES, name));
  return {
    ...((await load('test-app')) as typeof TestApp),
    ...((await load('security')) as typeof Security),
    ...((await load('test-database')) as typeof TestDatabase),
  };
}
