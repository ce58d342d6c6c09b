import { execFileSync } from 'node:child_process';
import path from 'node:path';

const SCRIPTS_DIR = path.join(__dirname, '..', '..', 'scripts');

/**
 * Runs a set-up script of scripts/ and returns the last line it printed (what each of
 * them prints last: a path, an image id, `DOCKER_HOST=…`); its progress goes to our stderr.
 */
export function runSetupScript(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const output = execFileSync('bash', [path.join(SCRIPTS_DIR, name)], { env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  return output.trim().split('\n').pop() ?? '';
}

function withDockerHost(dockerHost: string): NodeJS.ProcessEnv {
  return { ...process.env, DOCKER_HOST: dockerHost };
}

/** The engine the tests and the bench use, found or started by scripts/docker-engine.sh: its DOCKER_HOST. */
export function ensureDockerEngine(env: NodeJS.ProcessEnv = process.env): string {
  const hostLine = runSetupScript('docker-engine.sh', env);
  const match = /^DOCKER_HOST=(.+)$/.exec(hostLine);
  if (match?.[1] === undefined) throw new Error(`scripts/docker-engine.sh printed no DOCKER_HOST line (last line: ${hostLine})`);
  return match[1];
}

function imageId(script: string, dockerHost: string): string {
  const id = runSetupScript(script, withDockerHost(dockerHost));
  if (!/^sha256:[0-9a-f]{64}$/.test(id)) throw new Error(`scripts/${script} printed no image id (last line: ${id})`);
  return id;
}

/** The busybox HTTP test image (scripts/build-test-image.sh) on that engine, by id. */
export function ensureTestImage(dockerHost: string): string {
  return imageId('build-test-image.sh', dockerHost);
}

/** The moto emulator image (scripts/build-moto-image.sh) on that engine, by id. */
export function ensureMotoImage(dockerHost: string): string {
  return imageId('build-moto-image.sh', dockerHost);
}

/** The engine the tests use and the images they run, as the environment test files read. */
export function prepareDocker(): { DOCKER_HOST: string; SANDBOXPLANE_MOTO_IMAGE: string } {
  const dockerHost = ensureDockerEngine();
  ensureTestImage(dockerHost);
  return { DOCKER_HOST: dockerHost, SANDBOXPLANE_MOTO_IMAGE: ensureMotoImage(dockerHost) };
}
