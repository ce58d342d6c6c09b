import { openDatabase, schemaVersion, type OpenDatabaseOptions, type SqliteDatabase } from './database';
import { LATEST_SCHEMA_VERSION } from './migrations';

/**
 * The SQLite projection: inventory and audit trail that operators query without
 * reading workflow histories. One writer (the worker that owns the projection queue).
 */
export class Store {
  private constructor(
    readonly file: string,
    readonly db: SqliteDatabase,
  ) {}

  /** Opens (creating and migrating unless told otherwise) the store at `file`. */
  static open(file: string, options: OpenDatabaseOptions = {}): Store {
    return new Store(file, openDatabase(file, options));
  }

  get schemaVersion(): number {
    return schemaVersion(this.db);
  }

  get isCurrent(): boolean {
    return this.schemaVersion === LATEST_SCHEMA_VERSION;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
