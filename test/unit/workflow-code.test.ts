import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { buildIdOf, builtWorkflowBundle } from '../../src/worker/workflow-code';

describe("the build's workflow bundle: loaded only while it is current", () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'workflow-code-'));
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));

  /** A compiled tree like dist/: one nested module written at `compiledAt`, the bundle at `bundledAt` (seconds). */
  function compiledTree(name: string, compiledAt: number, bundledAt?: number): string {
    const root = path.join(scratch, name);
    const module = path.join(root, 'workflows', 'lifecycle.js');
    fs.mkdirSync(path.dirname(module), { recursive: true });
    fs.writeFileSync(module, 'exports.x = 1;\n');
    fs.utimesSync(module, compiledAt, compiledAt);
    if (bundledAt !== undefined) {
      const bundle = path.join(root, 'workflow-bundle.js');
      fs.writeFileSync(bundle, '/* the bundle */');
      fs.utimesSync(bundle, bundledAt, bundledAt);
    }
    return root;
  }

  test('written after the compiled code: the worker loads it', () => {
    const built = builtWorkflowBundle(compiledTree('current', 1_000, 2_000));
    assert.deepEqual(built.bundle, { code: '/* the bundle */' });
    assert.match(built.reason, /the build's .*workflow-bundle\.js/);
  });

  test('a module compiled after it (tsc without the bundle step): bundled afresh, saying why', () => {
    const built = builtWorkflowBundle(compiledTree('stale', 3_000, 2_000));
    assert.equal(built.bundle, undefined);
    assert.match(built.reason, /older than the compiled code; npm run build writes it again/);
  });

  test('no bundle (running from the TypeScript sources): bundled at start', () => {
    const built = builtWorkflowBundle(compiledTree('none', 1_000));
    assert.equal(built.bundle, undefined);
    assert.match(built.reason, /^no .*workflow-bundle\.js \(npm run build writes it\)$/);
  });

  test('the default build id names the workflow code: the same code, the same id; other code, another', () => {
    const id = buildIdOf({ code: '/* the bundle */' });
    assert.match(id, /^wf-[0-9a-f]{16}$/);
    assert.equal(buildIdOf({ code: '/* the bundle */' }), id);
    assert.notEqual(buildIdOf({ code: '/* the bundle, changed */' }), id);
  });
});
