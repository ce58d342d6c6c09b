/**
 * Parsing and normalising bind mounts (`source:target[:mode]`) for POSIX and Windows
 * hosts, and deciding whether a host path is one a sandbox may see. Pure: no I/O.
 *
 * The broker builds the engine's mount from this parse, never from the caller's
 * string, so what is checked here is exactly what the engine receives.
 */

/** A bind split into its three parts; `mode` is the text after the second colon. */
export interface ParsedBind {
  readonly source: string;
  readonly target: string;
  readonly mode: string | undefined;
}

export type BindParseResult = { readonly ok: true; readonly bind: ParsedBind } | { readonly ok: false; readonly reason: string };

/**
 * How a host path is to be read:
 * - `posix` `/srv/data`; `windows` `C:\data` (also `\\?\C:\data`);
 * - `pipe` a named pipe such as `\\.\pipe\docker_engine`; `unc` `\\server\share`;
 * - `device` any other `\\.\` or `\\?\` path; `relative` a relative path or volume name.
 */
export type HostPathStyle = 'posix' | 'windows' | 'pipe' | 'unc' | 'device' | 'relative';

export interface HostPath {
  readonly style: HostPathStyle;
  /** `..`, `.`, repeated and trailing separators resolved; Windows separators as `\`. */
  readonly normalized: string;
  /** What comparisons use: `normalized`, lower-cased where the host ignores case. */
  readonly key: string;
}

const DRIVE_PREFIX = /^[A-Za-z]:/;
const DEVICE_DRIVE_PREFIX = /^[\\/]{2}[?.][\\/][A-Za-z]:/;
const PIPE_PREFIX = /^[\\/]{2}\.[\\/]pipe[\\/]/i;
const UNC_LONG_PREFIX = /^[\\/]{2}\?[\\/]UNC[\\/]/i;
const DEVICE_PREFIX = /^[\\/]{2}[?.][\\/]/;

/** Index just past the path that starts at `from`, i.e. of the colon that ends it (or the end). */
function endOfPath(text: string, from: number): number {
  const rest = text.slice(from);
  let skip = 0;
  if (DEVICE_DRIVE_PREFIX.test(rest)) skip = 6;
  else if (DRIVE_PREFIX.test(rest)) skip = 2;
  const colon = text.indexOf(':', from + skip);
  return colon === -1 ? text.length : colon;
}

/**
 * Splits a bind the way a person means it: a Windows drive letter's colon belongs to
 * the path, so `C:\Users\me:/workspace` is source `C:\Users\me`, target `/workspace`.
 */
export function parseBind(text: string): BindParseResult {
  const sourceEnd = endOfPath(text, 0);
  const source = text.slice(0, sourceEnd);
  if (source === '') return { ok: false, reason: 'has an empty source' };
  if (sourceEnd >= text.length) return { ok: false, reason: `has no target (expected source:target[:mode], got '${text}')` };
  const targetEnd = endOfPath(text, sourceEnd + 1);
  const target = text.slice(sourceEnd + 1, targetEnd);
  if (target === '') return { ok: false, reason: 'has an empty target' };
  const mode = targetEnd < text.length ? text.slice(targetEnd + 1) : undefined;
  if (mode === '') return { ok: false, reason: 'has an empty mode after the last colon' };
  return { ok: true, bind: Object.freeze({ source, target, mode }) };
}

/** The inverse of {@link parseBind}. */
export function formatBind(bind: ParsedBind): string {
  return bind.mode === undefined ? `${bind.source}:${bind.target}` : `${bind.source}:${bind.target}:${bind.mode}`;
}

function normalizePosix(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

/** Windows ignores trailing dots and spaces in a name: `C:\Users.` is `C:\Users`. */
function normalizeWindows(path: string): string {
  const drive = path.slice(0, 2).toUpperCase();
  const parts: string[] = [];
  for (const raw of path.slice(2).split(/[\\/]/)) {
    if (raw === '.' || raw === '..') {
      if (raw === '..') parts.pop();
      continue;
    }
    const part = raw.replace(/[. ]+$/, '');
    if (part !== '') parts.push(part);
  }
  return `${drive}\\${parts.join('\\')}`;
}

function normalizeBackslashed(prefix: string, rest: string): string {
  const parts = rest.split(/[\\/]/).filter((part) => part !== '' && part !== '.');
  return `${prefix}${parts.join('\\')}`;
}

/** Classifies and normalises a host path without touching the file system. */
export function classifyHostPath(raw: string): HostPath {
  const windowsPath = (path: string): HostPath => {
    const normalized = normalizeWindows(path);
    return { style: 'windows', normalized, key: normalized.toLowerCase() };
  };
  if (PIPE_PREFIX.test(raw)) {
    const normalized = normalizeBackslashed('\\\\.\\pipe\\', raw.slice(9));
    return { style: 'pipe', normalized, key: normalized.toLowerCase() };
  }
  if (DEVICE_DRIVE_PREFIX.test(raw)) return windowsPath(raw.slice(4));
  if (UNC_LONG_PREFIX.test(raw)) {
    const normalized = normalizeBackslashed('\\\\', raw.slice(8));
    return { style: 'unc', normalized, key: normalized.toLowerCase() };
  }
  if (DEVICE_PREFIX.test(raw)) {
    const normalized = normalizeBackslashed(`\\\\${raw.charAt(2)}\\`, raw.slice(4));
    return { style: 'device', normalized, key: normalized.toLowerCase() };
  }
  if (/^[\\/]{2}[^\\/]/.test(raw) && raw.includes('\\')) {
    const normalized = normalizeBackslashed('\\\\', raw.slice(2));
    return { style: 'unc', normalized, key: normalized.toLowerCase() };
  }
  if (/^[A-Za-z]:[\\/]/.test(raw)) return windowsPath(raw);
  if (raw.startsWith('/')) {
    const normalized = normalizePosix(raw);
    return { style: 'posix', normalized, key: normalized };
  }
  return { style: 'relative', normalized: raw, key: raw };
}

/** True when a container path is absolute in either POSIX or Windows form. */
export function isAbsoluteContainerPath(path: string): boolean {
  return path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path);
}

/** Host paths no sandbox may bind, at, inside or above (DESIGN §5; docs/security.md). */
export const FORBIDDEN_POSIX_PATHS: readonly string[] = Object.freeze([
  '/var/run/docker.sock',
  '/run/docker.sock',
  '/etc',
  '/proc',
  '/sys',
  '/dev',
  '/root',
  '/home',
  '/run',
  '/var/run',
  '/boot',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/var/lib/docker',
  '/var/lib/containerd',
  '/Users',
]);

export const FORBIDDEN_WINDOWS_PATHS: readonly string[] = Object.freeze(['C:\\Windows', 'C:\\Users', 'C:\\ProgramData']);

export const DOCKER_ENGINE_PIPE = '\\\\.\\pipe\\docker_engine';

/** Extra host paths to protect, e.g. the socket of the engine in use and its data root. */
export interface BindPolicy {
  readonly extraForbiddenPaths?: readonly string[];
}

export type BindSourceVerdict = { readonly ok: true; readonly path: HostPath } | { readonly ok: false; readonly reason: string };

function isWithin(child: string, parent: string, separator: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(separator) ? parent : parent + separator);
}

function describe(raw: string, path: HostPath): string {
  return raw === path.normalized ? `source ${raw}` : `source ${raw} (normalised ${path.normalized})`;
}

/**
 * Decides whether `raw` may be bound into a container. Only absolute POSIX paths and
 * Windows drive paths can pass; the host root, the Docker socket and the system and
 * home directories are refused when the source is at, inside or above them.
 */
export function checkBindSource(raw: string, policy: BindPolicy = {}): BindSourceVerdict {
  const path = classifyHostPath(raw);
  const subject = describe(raw, path);
  switch (path.style) {
    case 'relative':
      return {
        ok: false,
        reason: `source ${raw} is not an absolute host path (named volumes and relative paths are not brokered)`,
      };
    case 'pipe':
      return path.key === DOCKER_ENGINE_PIPE.toLowerCase()
        ? { ok: false, reason: `${subject} is the Docker engine pipe ${DOCKER_ENGINE_PIPE}` }
        : { ok: false, reason: `${subject} is a named pipe; no pipe at or beside ${DOCKER_ENGINE_PIPE} may be bound` };
    case 'unc':
      return { ok: false, reason: `${subject} is a network (UNC) path, which can reach any drive of the host` };
    case 'device':
      return { ok: false, reason: `${subject} is a Windows device path` };
    case 'posix':
    case 'windows':
      break;
  }

  const windows = path.style === 'windows';
  const separator = windows ? '\\' : '/';
  if (windows ? /^[a-z]:\\$/.test(path.key) : path.key === '/') {
    return { ok: false, reason: `${subject} is the root of the host file system` };
  }
  const forbidden = [...(windows ? FORBIDDEN_WINDOWS_PATHS : FORBIDDEN_POSIX_PATHS), ...(policy.extraForbiddenPaths ?? [])];
  for (const entry of forbidden) {
    const protectedPath = classifyHostPath(entry);
    if (protectedPath.style !== path.style) continue;
    if (isWithin(path.key, protectedPath.key, separator)) {
      const relation = path.key === protectedPath.key ? 'is' : 'is inside';
      return { ok: false, reason: `${subject} ${relation} the forbidden path ${protectedPath.normalized}` };
    }
    if (isWithin(protectedPath.key, path.key, separator)) {
      return { ok: false, reason: `${subject} contains the forbidden path ${protectedPath.normalized}` };
    }
  }
  return { ok: true, path };
}
