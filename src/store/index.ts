export { Store } from './store';
export { openDatabase, migrate, schemaVersion, type SqliteDatabase, type OpenDatabaseOptions } from './database';
export { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations';
