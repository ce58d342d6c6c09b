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

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_RECOVERY, SQLITE_BUSY_SNAPSHOT), which better-sqlite3 reports as they are. */
function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Sets a connection up: WAL, then the schema check and the migrations. Processes opening
 * one fresh file race here, and SQLite answers some losers "busy" at once, without the busy
 * handler: the WAL switch reads page 1 and then upgrades to a write inside that read, which
 * SQLite refuses outright while another connection holds the write lock, and its extended
 * codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_RECOVERY) are not the plain one a retry of the
 * switch alone looked for. Every step is idempotent (the migrations run in one transaction,
 * rolled back on failure), so the whole set-up is tried again, every 20 ms, until the busy
 * timeout has passed.
 */
function setUp(db: SqliteDatabase, file: string, options: OpenDatabaseOptions, deadline = Date.now() + BUSY_TIMEOUT_MS): void {
  try {
    if (!options.readonly) db.pragma('journal_mode = WAL');
    refuseNewerSchema(db, file);
    if (options.migrate ?? true) migrate(db);
  } catch (err) {
    if (!isBusy(err) || Date.now() > deadline) throw err;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    setUp(db, file, options, deadline);
  }
}

/** The database file and SQLite's companions of it, which hold the same rows. */
const COMPANIONS = ['', '-wal', '-shm', '-journal'];

/**
 * The file holds audit rows, purposes and encrypted approver secrets: it is created 0600
 * (in a directory created 0700) before SQLite opens it, since SQLite creates a file 0644
 * and gives its -wal and -shm the main file's mode; a file left 0644 by an earlier build
 * is narrowed here too. No symbolic link is followed: each file is opened with O_NOFOLLOW
 * and narrowed through that descriptor, so a link planted beside the store cannot get
 * another file's mode changed (or the store written into it).
 */
function createPrivately(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  for (const suffix of COMPANIONS) narrow(`${file}${suffix}`, suffix === '');
}

function narrow(pathname: string, create: boolean): void {
  let fd: number;
  try {
    fd = fs.openSync(pathname, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | (create ? fs.constants.O_CREAT : 0), 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') {
      throw new SandboxPlaneError('CONFIG_INVALID', `${pathname} is a symbolic link: the store opens only files of its own, never through a link`, {
        hint: 'Point SANDBOXPLANE_DB at the real file (and remove the link beside it).',
      });
    }
    // Absent is fine; a file another user owns keeps its mode, and SQLite says whether it can be used.
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EPERM') return;
    throw err;
  }
  try {
    fs.fchmodSync(fd, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Opens the projection database with the settings every connection needs: WAL so
 * readers never block the writer, foreign keys on (SQLite defaults them off), and a
 * busy timeout so a second process waits instead of failing.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): SqliteDatabase {
  let db: SqliteDatabase;
  try {
    if (!options.readonly && file !== ':memory:') createPrivately(file);
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
    setUp(db, file, options);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
