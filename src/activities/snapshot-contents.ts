import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { SandboxPlaneError } from '../domain/errors';
import type { SnapshotSeal } from '../crypto/snapshot-seal';

const DIGEST = /^[0-9a-f]{64}$/;

/**
 * Snapshot content at rest (DESIGN §15), out of workflow history: one sealed file per
 * digest (compressed state), so forks of one snapshot, and snapshots of one state, share
 * it. The docker host that captures a state writes it; the one that restores reads it;
 * the store, which counts who holds what, removes it with the last snapshot that holds
 * it (the cleanup sweep, a day after the last one went, so a fork or an IaC checkpoint
 * that already named it still finds it). All of them name the same directory (SANDBOXPLANE_SNAPSHOT_DIR): one machine's
 * disk, or a shared mount where the roles run on several.
 */
export class SnapshotContents {
  constructor(
    readonly dir: string,
    private readonly seal: SnapshotSeal,
  ) {}

  private fileOf(digest: string): string {
    if (!DIGEST.test(digest)) throw new SandboxPlaneError('INVALID_INPUT', `snapshot digest: must be 64 lowercase hex digits, got ${JSON.stringify(digest.slice(0, 80))}`);
    return path.join(this.dir, digest.slice(0, 2), `${digest}.sealed`);
  }

  /** Keeps `gzip` (the compressed state whose SHA-256 is `digest`); content kept already stays as it is. */
  async put(digest: string, gzip: Buffer): Promise<void> {
    const file = this.fileOf(digest);
    // Kept already, under this plane's keys: shared, and its time renewed so that the sweep's grace for
    // content no snapshot holds counts from now. Under another's (a directory two planes name), replaced.
    if (await this.heldHere(file)) {
      const now = new Date();
      await fs.utimes(file, now, now);
      return;
    }
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    // Written aside, then renamed: a reader never sees half a file, and two writers of one digest both leave a whole one.
    const aside = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.part`;
    try {
      await fs.writeFile(aside, this.seal.seal(gzip, digest), { mode: 0o600 });
      await fs.rename(aside, file);
    } catch (err) {
      await fs.rm(aside, { force: true });
      throw err;
    }
  }

  /** The compressed state kept under `digest`; SNAPSHOT_CORRUPT when it is gone or does not open. */
  async get(digest: string): Promise<Buffer> {
    const sealed = await fs.readFile(this.fileOf(digest)).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? this.missing(digest) : err;
    });
    return this.seal.open(sealed, digest);
  }

  /** SNAPSHOT_CORRUPT unless content of `digest` is kept: a snapshot is recorded only over content that is there. */
  async mustHold(digest: string): Promise<void> {
    if (!(await exists(this.fileOf(digest)))) throw this.missing(digest);
  }

  private async heldHere(file: string): Promise<boolean> {
    const handle = await fs.open(file, 'r').catch(() => undefined);
    if (handle === undefined) return false;
    try {
      const head = Buffer.alloc(200);
      const { bytesRead } = await handle.read(head, 0, head.length, 0);
      return this.seal.opensHere(head.subarray(0, bytesRead));
    } finally {
      await handle.close();
    }
  }

  /** Removes the content of `digest`, if kept. */
  async remove(digest: string): Promise<void> {
    await fs.rm(this.fileOf(digest), { force: true });
  }

  /**
   * Every file kept, with when it was last written: by digest (what the sweep weighs against
   * the snapshots that hold content), or as `partial`, a write a crash cut short.
   */
  async list(): Promise<{ digest: string; modifiedMs: number; partial?: string }[]> {
    const shards = await fs.readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    const kept: { digest: string; modifiedMs: number; partial?: string }[] = [];
    for (const shard of shards.filter((name) => /^[0-9a-f]{2}$/.test(name))) {
      for (const name of await fs.readdir(path.join(this.dir, shard))) {
        const digest = name.slice(0, 64);
        const whole = name === `${digest}.sealed`;
        if (!DIGEST.test(digest) || !(whole || name.endsWith('.part'))) continue;
        const stat = await fs.stat(path.join(this.dir, shard, name)).catch(() => undefined);
        if (stat !== undefined) kept.push({ digest, modifiedMs: stat.mtimeMs, ...(whole ? {} : { partial: path.join(this.dir, shard, name) }) });
      }
    }
    return kept;
  }

  /** Removes a write a crash cut short (a `partial` of {@link list}). */
  async removePartial(file: string): Promise<void> {
    if (path.dirname(path.dirname(file)) !== this.dir || !file.endsWith('.part')) throw new SandboxPlaneError('INVALID_INPUT', `${file} is no partial write of ${this.dir}`);
    await fs.rm(file, { force: true });
  }

  private missing(digest: string): SandboxPlaneError {
    return new SandboxPlaneError('SNAPSHOT_CORRUPT', `snapshot content ${digest} is not in ${this.dir}`, {
      hint: 'Every docker host and the store must name one directory in SANDBOXPLANE_SNAPSHOT_DIR (a shared mount across machines).',
    });
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
