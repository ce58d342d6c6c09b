import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Store } from '../../src/store';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-store-modes-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8);

describe('the store file and its companions are private to their owner', () => {
  test('a fresh file, its -wal and -shm are 0600 and the folder made for it 0700, whatever the umask', () => {
    const folder = path.join(dir, 'fresh');
    const file = path.join(folder, 'plane.sqlite');
    const umask = process.umask(0o002);
    let store: Store | undefined;
    try {
      store = Store.open(file);
      store.db.exec('CREATE TABLE written (id INTEGER)');
      assert.ok(fs.existsSync(`${file}-wal`) && fs.existsSync(`${file}-shm`), 'WAL mode made its companions');
      assert.deepEqual([file, `${file}-wal`, `${file}-shm`].map(modeOf), ['600', '600', '600']);
      assert.equal(modeOf(folder), '700');
    } finally {
      store?.close();
      process.umask(umask);
    }
  });

  test('a file an earlier build left 0644 (with its -wal and -shm) is narrowed to 0600 when it opens', () => {
    const file = path.join(dir, 'earlier', 'plane.sqlite');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const earlier = new Database(file);
    earlier.pragma('journal_mode = WAL');
    earlier.exec('CREATE TABLE kept (id INTEGER)');
    // Still open, so its -wal and -shm stay in place for the store's connection to find.
    for (const companion of [file, `${file}-wal`, `${file}-shm`]) fs.chmodSync(companion, 0o644);
    const store = Store.open(file);
    try {
      assert.deepEqual([file, `${file}-wal`, `${file}-shm`].map(modeOf), ['600', '600', '600']);
    } finally {
      store.close();
      earlier.close();
    }
  });

  test('a read-only open leaves the mode alone (doctor may read a file it does not own)', () => {
    const file = path.join(dir, 'readonly', 'plane.sqlite');
    Store.open(file).close();
    fs.chmodSync(file, 0o640);
    Store.open(file, { readonly: true, migrate: false }).close();
    assert.equal(modeOf(file), '640');
  });
});
