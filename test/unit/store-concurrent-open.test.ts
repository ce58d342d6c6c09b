import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { LATEST_SCHEMA_VERSION, Store } from '../../src/store';
import { REPO_ROOT } from '../harness/cli';

const CHILD = path.join(REPO_ROOT, 'test', 'helpers', 'open-store-process.ts');
// More openers than cores: the race of the WAL switch and the migrations is lost several times per run.
const PROCESSES = 10;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-concurrent-open-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Opener {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<Record<string, unknown>>;
}

function startOpener(file: string, mode: 'open' | 'migrate'): Opener {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file, mode], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.startsWith('ready\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`opener exited with ${code} before it was ready: ${stderr}`)));
  });
  const result = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.once('close', (code) => {
      const line = stdout.split('\n')[1] ?? '';
      if (code !== 0 || line === '') reject(new Error(`opener exited with ${code}; stdout: ${stdout}; stderr: ${stderr}`));
      else resolve(JSON.parse(line) as Record<string, unknown>);
    });
  });
  result.catch(() => undefined);
  return { child, ready, result };
}

/** Starts the processes, waits until each has loaded the store code, then releases them together. */
async function openAtOnce(file: string, mode: 'open' | 'migrate'): Promise<Record<string, unknown>[]> {
  const openers = Array.from({ length: PROCESSES }, () => startOpener(file, mode));
  await Promise.all(openers.map((opener) => opener.ready));
  for (const opener of openers) opener.child.stdin?.write('go\n');
  return Promise.all(openers.map((opener) => opener.result));
}

function assertLatestSchema(file: string): void {
  const store = Store.open(file, { readonly: true, migrate: false });
  try {
    assert.equal(store.schemaVersion, LATEST_SCHEMA_VERSION);
    const columns = store.db.prepare("SELECT name FROM pragma_table_info('sandboxes') WHERE name = 'run_id'").all();
    assert.equal(columns.length, 1);
  } finally {
    store.close();
  }
}

describe('several processes opening one fresh store file at the same moment', () => {
  test('every Store.open succeeds and the file ends at the latest schema version', async () => {
    const file = path.join(dir, 'open', 'plane.sqlite');
    const results = await openAtOnce(file, 'open');
    assert.deepEqual(
      results,
      results.map(() => ({ ok: true, version: LATEST_SCHEMA_VERSION })),
    );
    assertLatestSchema(file);
  });

  test('every migrate() succeeds and exactly one process applies the migrations, all of them', async () => {
    const file = path.join(dir, 'migrate', 'plane.sqlite');
    const results = await openAtOnce(file, 'migrate');
    assert.ok(
      results.every((result) => result.ok === true),
      JSON.stringify(results),
    );
    const appliers = results.filter((result) => result.from !== result.to);
    assert.deepEqual(appliers, [{ ok: true, from: 0, to: LATEST_SCHEMA_VERSION }], JSON.stringify(results));
    assert.ok(
      results.every((result) => result.to === LATEST_SCHEMA_VERSION),
      JSON.stringify(results),
    );
    assertLatestSchema(file);
  });
});
