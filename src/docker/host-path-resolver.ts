import { realpathSync } from 'node:fs';
import { posix } from 'node:path';

/**
 * Resolves symbolic links in an absolute POSIX path, as far as the path exists: a
 * missing tail is kept as written, since the engine would create it under the
 * resolved parent. Used only when the engine shares this machine's file system, so
 * that `/tmp/link -> /etc` is judged as `/etc`.
 */
export function resolveExistingHostPath(path: string): string {
  let existing = path;
  const missing: string[] = [];
  for (;;) {
    try {
      const resolved = realpathSync.native(existing);
      return missing.length === 0 ? resolved : posix.join(resolved, ...missing.reverse());
    } catch {
      if (existing === '/') return path;
      missing.push(posix.basename(existing));
      existing = posix.dirname(existing);
    }
  }
}
