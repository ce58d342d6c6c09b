import fs from 'node:fs';
import type { Config } from '../config/config';
import { SandboxPlaneError } from '../domain/errors';
import { LATEST_SCHEMA_VERSION, Store } from '../store';

/** Runs `work` against the SQLite projection at SANDBOXPLANE_DB (creating it if needed), and always closes it. */
export function withStore<T>(config: Config, work: (store: Store) => T): T {
  const store = Store.open(config.storePath);
  try {
    return work(store);
  } finally {
    store.close();
  }
}

/**
 * Reads the projection without creating or migrating it: a mistyped SANDBOXPLANE_DB
 * must say so, not answer from a fresh empty file.
 */
export function withStoreReadOnly<T>(config: Config, work: (store: Store) => T): T {
  if (!fs.existsSync(config.storePath)) {
    throw new SandboxPlaneError('STORE_UNAVAILABLE', `no store at ${config.storePath}`, {
      hint: "Start the worker first (it creates the store), or point SANDBOXPLANE_DB at the worker's file.",
    });
  }
  const store = Store.open(config.storePath, { readonly: true, migrate: false });
  try {
    if (store.schemaVersion < LATEST_SCHEMA_VERSION) {
      throw new SandboxPlaneError('STORE_UNAVAILABLE', `${config.storePath} is at schema version ${store.schemaVersion}; this build reads ${LATEST_SCHEMA_VERSION}`, {
        hint: 'Start the worker of this version once: it migrates the store.',
      });
    }
    return work(store);
  } finally {
    store.close();
  }
}
