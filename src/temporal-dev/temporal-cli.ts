import fs from 'node:fs';
import path from 'node:path';
import { SandboxPlaneError } from '../domain/errors';
import { TOOLS_BIN_DIR } from '../config/paths';

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, envPath: string | undefined): string | undefined {
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Finds the Temporal CLI: an explicit path (SANDBOXPLANE_TEMPORAL_CLI) wins, then the
 * project's own `.tools/bin/temporal` (installed by scripts/install-temporal-cli.sh at
 * the pinned version), then `temporal` on PATH.
 */
export function locateTemporalCli(explicitPath: string | undefined, envPath: string | undefined = process.env.PATH): string {
  if (explicitPath !== undefined) {
    if (isExecutable(explicitPath)) return explicitPath;
    throw new SandboxPlaneError('TEMPORAL_CLI_MISSING', `SANDBOXPLANE_TEMPORAL_CLI names ${explicitPath}, which is not an executable file`);
  }
  const local = path.join(TOOLS_BIN_DIR, 'temporal');
  if (isExecutable(local)) return local;
  const found = onPath('temporal', envPath);
  if (found !== undefined) return found;
  throw new SandboxPlaneError('TEMPORAL_CLI_MISSING', `no Temporal CLI in ${TOOLS_BIN_DIR} or on PATH`);
}
