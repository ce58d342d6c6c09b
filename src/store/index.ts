export { Store } from './store';
export { openDatabase, migrate, schemaVersion, type SqliteDatabase, type OpenDatabaseOptions } from './database';
export { API_KEYS_SCHEMA_VERSION, LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations';
export { SandboxRepository, type SandboxSnapshot, type OperationRecord } from './sandbox-repository';
export { TargetRepository } from './target-repository';
export { PolicyRepository, ApproverRepository, NO_FAILURES, type ApprovalFailures } from './policy-repository';
export { LeakRepository } from './leak-repository';
export { ApiKeyRepository, type ApiKeyCredential } from './api-key-repository';
