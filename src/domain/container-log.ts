/**
 * How much of its own output a container may keep on the host's disk (DESIGN §12):
 * the engine's json-file driver, rotated, so a sandbox that writes without end cannot
 * fill the disk. Set by `SANDBOXPLANE_CONTAINER_LOG_MAX` and `SANDBOXPLANE_CONTAINER_LOG_FILES`.
 */
export interface ContainerLogLimit {
  /** Bytes the container's log may take on disk, all its files together. */
  readonly maxBytes: number;
  /** How many files the log is rotated through (the engine drops the oldest). */
  readonly files: number;
}

export const DEFAULT_CONTAINER_LOG_MAX = '10m';
export const DEFAULT_CONTAINER_LOG_FILES = 2;

export const DEFAULT_CONTAINER_LOG_LIMIT: ContainerLogLimit = Object.freeze({ maxBytes: 10 * 1024 * 1024, files: DEFAULT_CONTAINER_LOG_FILES });

/** Below this a log file would hold too few lines to read anything from. */
export const MIN_CONTAINER_LOG_FILE_BYTES = 64 * 1024;

export const MAX_CONTAINER_LOG_FILES = 20;

/** The size of each of the log's files: the engine rotates at it. */
export function logFileBytes(limit: ContainerLogLimit): number {
  return Math.floor(limit.maxBytes / limit.files);
}
