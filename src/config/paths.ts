import fs from 'node:fs';
import path from 'node:path';

/** The package root: two levels above this file in both `src/config` and `dist/config`. */
export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

/** Git-ignored folder for local state (Temporal's dev database, the projection). */
export const DATA_DIR = path.join(PROJECT_ROOT, '.data');

/** Git-ignored folder for tools the project installs for itself (the Temporal CLI). */
export const TOOLS_BIN_DIR = path.join(PROJECT_ROOT, '.tools', 'bin');

export const DEFAULT_STORE_PATH = path.join(DATA_DIR, 'sandboxplane.sqlite');
export const DEFAULT_TEMPORAL_DB_PATH = path.join(DATA_DIR, 'temporal.sqlite');

/** The payload codec's keys when none are configured: made with a fresh key when the plane first starts (docs/security.md). */
export const DEFAULT_CODEC_KEYS_PATH = path.join(DATA_DIR, 'codec-keys');

/** This package's version (package.json); `0.0.0` when it cannot be read. */
export function packageVersion(): string {
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof manifest.version === 'string' ? manifest.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}
