import { sha256Hex } from './sha256';

/**
 * Which Docker engine a container runs on. `docker info`'s ID alone is not enough: on
 * Docker before 23 it comes from /etc/docker/key.json, which every engine of one
 * machine (and every VM cloned from one image) shares. The engine's name and data root
 * tell such engines apart, so the id is `<docker ID>/<hash of name and data root>`.
 */
export function engineIdOf(info: { readonly ID: string; readonly Name?: string; readonly DockerRootDir?: string }): string {
  if (info.Name === undefined && info.DockerRootDir === undefined) return info.ID;
  return `${info.ID}/${sha256Hex(`${info.Name ?? ''}\u0000${info.DockerRootDir ?? ''}`).slice(0, 12)}`;
}

/**
 * Whether a recorded engine id names the engine `here`. Ids recorded before the suffix
 * existed are the bare docker ID: they match an engine with that ID (all that was known).
 */
export function sameEngine(recorded: string, here: string): boolean {
  return recorded === here || (!recorded.includes('/') && here.startsWith(`${recorded}/`));
}
