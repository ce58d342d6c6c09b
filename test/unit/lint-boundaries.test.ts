/**
 * The import directions of STYLE.md are enforced by `npm run lint`, not by discipline:
 * probe files in the layers lint with the repository's own config. Needs neither
 * Docker nor Temporal.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ESLint } from 'eslint';

const ROOT = path.join(__dirname, '..', '..');
const RULE = 'import-x/no-restricted-paths';

interface Probe {
  readonly file: string;
  readonly code: string;
}

// Written to disk, not only passed as text: type-aware linting needs each file inside the tsconfig project.
function probe(folder: string, name: string, code: string, under = 'src'): Probe {
  return { file: path.join(ROOT, under, folder, `lint-probe-${name}-${process.pid}.ts`), code };
}

const domainImportsStore = probe('domain', 'store', "import type { Store } from '../store';\nexport type Probe = Store;\n");
const workflowImportsStore = probe('workflows', 'store', "import type { Store } from '../store';\nexport type Probe = Store;\n");
const activityImportsStore = probe('activities', 'store', "import type { Store } from '../store';\nexport type Probe = Store;\n");
const workflowImportsActivityType = probe('workflows', 'activities', "import type { Activities } from '../activities';\nexport type Probe = Activities;\n");
const commandImportsStore = probe('cli/commands', 'store', "import type { Store } from '../../store';\nexport type Probe = Store;\n");
const benchImportsHelpers = probe('bench', 'helpers', "import { rejectsWith } from '../test/helpers/rejects-with';\nexport const probe = rejectsWith;\n", '.');
const benchImportsHarness = probe('bench', 'harness', "import { eventually } from '../test/harness/eventually';\nexport const probe = eventually;\n", '.');
const probes = [domainImportsStore, workflowImportsStore, activityImportsStore, workflowImportsActivityType, commandImportsStore, benchImportsHelpers, benchImportsHarness];

describe('lint enforces the direction of imports', () => {
  let eslint: ESLint;

  before(() => {
    for (const { file, code } of probes) fs.writeFileSync(file, code);
    eslint = new ESLint({ cwd: ROOT });
  });

  after(() => {
    for (const { file } of probes) fs.rmSync(file, { force: true });
  });

  async function restrictedPathErrors({ file, code }: Probe): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: file });
    assert.ok(result, `no lint result for ${file}`);
    const fatal = result.messages.filter((message) => message.fatal === true);
    assert.deepEqual(fatal, [], 'the probe parses');
    return result.messages.filter((message) => message.ruleId === RULE && message.severity === 2).map((message) => message.message);
  }

  test('src/domain importing src/store is an error', async () => {
    const errors = await restrictedPathErrors(domainImportsStore);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0] ?? '', /"\.\.\/store" imported in restricted zone\. src\/domain imports nothing of ours but src\/domain/);
  });

  test('src/workflows importing src/store is an error, even as a type', async () => {
    const errors = await restrictedPathErrors(workflowImportsStore);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0] ?? '', /"\.\.\/store" imported in restricted zone\. src\/workflows imports only src\/domain and src\/workflows/);
  });

  test('a CLI command importing src/store is an error: callers reach the store through Temporal (DESIGN §10)', async () => {
    const errors = await restrictedPathErrors(commandImportsStore);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0] ?? '', /"\.\.\/\.\.\/store" imported in restricted zone\. The CLI reaches the store through Temporal/);
  });

  test('the bench importing test/helpers is an error; test/harness is what it shares with the tests', async () => {
    const errors = await restrictedPathErrors(benchImportsHelpers);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0] ?? '', /bench and test\/harness import test\/harness, not test\/helpers/);
    assert.deepEqual(await restrictedPathErrors(benchImportsHarness), []);
  });

  test('the same imports where STYLE.md allows them pass: activities → store, workflows → type of activities', async () => {
    assert.deepEqual(await restrictedPathErrors(activityImportsStore), []);
    assert.deepEqual(await restrictedPathErrors(workflowImportsActivityType), []);
  });
});
