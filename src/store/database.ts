import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SandboxPlaneError } from '../domain/errors';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations';

export type SqliteDatabase = Database.Database;

/** How long a writer waits for another connection's lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5_000;

export interface OpenDatabaseOptions {
  /** Apply pending migrations (the worker does); `false` only reads the version (doctor). */
  readonly migrate?: boolean;
  readonly readonly?: boolean;
}

export function schemaVersion(db: SqliteDatabase): number {
  return db.pragma('user_version', { simple: true }) as number;
}

function refuseNewerSchema(db: SqliteDatabase, file: string): void {
  const version = schemaVersion(db);
  if (version > LATEST_SCHEMA_VERSION) {
    throw new SandboxPlaneError('STORE_VERSION_TOO_NEW', `${file} has schema version ${version}, but this build of cloud-sandbox-plane knows versions up to ${LATEST_SCHEMA_VERSION}`, {
      details: { file, version, known: LATEST_SCHEMA_VERSION },
    });
  }
}

/**
 * Runs every pending migration in one `BEGIN IMMEDIATE` transaction that also reads the
 * version: two processes opening a fresh file at once serialize on the write lock (the
 * busy timeout makes the second wait), and the second then finds nothing left to apply.
 */
export function migrate(db: SqliteDatabase): { from: number; to: number } {
  return db
    .transaction(() => {
      const from = schemaVersion(db);
      for (let version = from; version < MIGRATIONS.length; version += 1) db.exec(MIGRATIONS[version] as string);
      if (from < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
      return { from, to: schemaVersion(db) };
    })
    .immediate();
}

/**
 * The switch to WAL needs the file to itself: while another connection creates a fresh
 * file, SQLite answers SQLITE_BUSY at once, without the busy handler, so try again (every
 * 20 ms) until the busy timeout has passed.
 */
function enableWal(db: SqliteDatabase, deadline = Date.now() + BUSY_TIMEOUT_MS): void {
  try {
    db.pragma('journal_mode = WAL');
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    enableWal(db, deadline);
  }
}

/**
 * Opens the projection database with the settings every connection needs: WAL so
 * readers never block the writer, foreign keys on (SQLite defaults them off), and a
 * busy timeout so a second process waits instead of failing.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): SqliteDatabase {
  if (!options.readonly && file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  let db: SqliteDatabase;
  try {
    db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw new SandboxPlaneError('STORE_UNAVAILABLE', `cannot open ${file}: ${(err as Error).message}`, {
      details: { file },
      cause: err,
    });
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('foreign_keys = ON');
    if (!options.readonly) enableWal(db);
    refuseNewerSchema(db, file);
    if (options.migrate ?? true) migrate(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
