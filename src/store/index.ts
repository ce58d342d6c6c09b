export { Store } from './store';
export { openDatabase, migrate, schemaVersion, type SqliteDatabase, type OpenDatabaseOptions } from './database';
export { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations';
export { SandboxRepository, type SandboxSnapshot, type OperationRecord } from './sandbox-repository';
export { TargetRepository } from './target-repository';
export { PolicyRepository, ApproverRepository } from './policy-repository';
export { LeakRepository } from './leak-repository';
export { ApiKeyRepository, type ApiKeyCredential } from './api-key-repository';
