import type { ApiKeyRecord, NewApiKeyRow } from '../domain/api-keys';
import type { SqliteDatabase } from './database';

const COLUMNS = 'key_id AS keyId, principal, rate_per_minute AS ratePerMinute, max_in_flight AS maxInFlight, created_at AS createdAt, revoked_at AS revokedAt';

/** A key row with what verifying it needs. */
export interface ApiKeyCredential extends ApiKeyRecord {
  readonly secretHash: string;
}

/** The gateway's API keys (DESIGN §18): written by the store role, read by the gateway. */
export class ApiKeyRepository {
  constructor(private readonly db: SqliteDatabase) {}

  /**
   * Adds a key; the same key again (a retried command) keeps the first row. Another key
   * under a taken id (a 48-bit collision) is `undefined`: its key could never work.
   */
  add(key: NewApiKeyRow, now: Date = new Date()): ApiKeyRecord | undefined {
    this.db
      .prepare('INSERT INTO api_keys (key_id, principal, secret_hash, rate_per_minute, max_in_flight, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key_id) DO NOTHING')
      .run(key.keyId, key.principal, key.secretHash, key.ratePerMinute, key.maxInFlight, now.toISOString());
    const row = this.credential(key.keyId);
    if (row === undefined || row.secretHash !== key.secretHash) return undefined;
    const { secretHash: _hash, ...record } = row;
    return record;
  }

  list(): ApiKeyRecord[] {
    return this.db.prepare(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, key_id`).all() as ApiKeyRecord[];
  }

  get(keyId: string): ApiKeyRecord | undefined {
    return this.db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE key_id = ?`).get(keyId) as ApiKeyRecord | undefined;
  }

  /** The row the gateway checks a presented key against. */
  credential(keyId: string): ApiKeyCredential | undefined {
    return this.db.prepare(`SELECT ${COLUMNS}, secret_hash AS secretHash FROM api_keys WHERE key_id = ?`).get(keyId) as ApiKeyCredential | undefined;
  }

  /** Revokes a key (again: keeps the first time); `undefined` when there is none by that id. */
  revoke(keyId: string, now: Date = new Date()): ApiKeyRecord | undefined {
    this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL').run(now.toISOString(), keyId);
    return this.get(keyId);
  }
}
