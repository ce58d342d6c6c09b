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

describe('the store follows no symbolic link (issue 39)', () => {
  test("a link planted as the store's -wal is refused, and the file it points at keeps its mode", () => {
    const file = path.join(dir, 'linked', 'plane.sqlite');
    Store.open(file).close();
    const outside = path.join(dir, 'outside.txt');
    fs.writeFileSync(outside, 'not the store');
    fs.chmodSync(outside, 0o644);
    fs.rmSync(`${file}-wal`, { force: true });
    fs.symlinkSync(outside, `${file}-wal`);
    assert.throws(() => Store.open(file), /plane\.sqlite-wal is a symbolic link/);
    assert.equal(modeOf(outside), '644');
  });

  test('a store path that is itself a link is refused', () => {
    const real = path.join(dir, 'real.sqlite');
    Store.open(real).close();
    fs.chmodSync(real, 0o644);
    const link = path.join(dir, 'link.sqlite');
    fs.symlinkSync(real, link);
    assert.throws(() => Store.open(link), /link\.sqlite is a symbolic link/);
    assert.equal(modeOf(real), '644');
  });
});
