import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { selectTestFiles } from '../helpers/test-files';

describe('test file selection (npm test -- FILTER)', () => {
  // A checkout under a folder whose name contains the filter: the case that once ran every test.
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'floci-checkout-'));
  const testDir = path.join(root, 'test');
  for (const relative of [
    'floci-adapter.test.ts',
    'moto-adapter.test.ts',
    'docker/floci-side.test.ts',
    'unit/config.test.ts',
    'unit/floci-keys.test.ts',
    'cluster/floci-cluster.test.ts',
    'helpers/floci.ts',
  ]) {
    fs.mkdirSync(path.dirname(path.join(testDir, relative)), { recursive: true });
    fs.writeFileSync(path.join(testDir, relative), '');
  }
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  const relatives = (options: { unitOnly: boolean; cluster?: boolean; filters: string[] }) => selectTestFiles(testDir, options).map((file) => file.relative);

  test('filters match the path under test/, not the folders above it', () => {
    assert.ok(testDir.includes('floci'), 'the checkout folder itself contains the filter');
    assert.deepEqual(relatives({ unitOnly: false, filters: ['floci'] }), [path.join('docker', 'floci-side.test.ts'), 'floci-adapter.test.ts', path.join('unit', 'floci-keys.test.ts')]);
    assert.deepEqual(relatives({ unitOnly: false, filters: ['checkout'] }), [], 'a folder above test/ matches nothing');
    assert.deepEqual(relatives({ unitOnly: false, filters: ['floci-adapter'] }), ['floci-adapter.test.ts']);
  });

  test('several filters select the union; --unit keeps test/unit/ only; absolute paths point into test/', () => {
    assert.deepEqual(relatives({ unitOnly: false, filters: ['moto', 'config'] }), ['moto-adapter.test.ts', path.join('unit', 'config.test.ts')]);
    assert.deepEqual(relatives({ unitOnly: true, filters: ['floci'] }), [path.join('unit', 'floci-keys.test.ts')]);
    assert.deepEqual(relatives({ unitOnly: true, filters: [] }), [path.join('unit', 'config.test.ts'), path.join('unit', 'floci-keys.test.ts')]);
    for (const { file, relative } of selectTestFiles(testDir, { unitOnly: false, filters: [] })) assert.equal(file, path.join(testDir, relative));
  });

  test('test/cluster/ runs only with --cluster, and then alone', () => {
    assert.ok(!relatives({ unitOnly: false, filters: [] }).some((relative) => relative.startsWith('cluster')), 'npm test leaves test/cluster/ out');
    assert.deepEqual(relatives({ unitOnly: false, cluster: true, filters: [] }), [path.join('cluster', 'floci-cluster.test.ts')]);
    assert.deepEqual(relatives({ unitOnly: false, cluster: true, filters: ['moto'] }), []);
  });
});
