import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ClientConfig } from '../../src/domain/client-config';

/**
 * The environment of an `aws` CLI run against a sandbox: its own key and region, and
 * nothing of this machine's AWS set-up (no profile, no config file), one attempt per call.
 */
export function awsCliEnv(config: ClientConfig): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AWS_ACCESS_KEY_ID: config.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: config.credentials.secretAccessKey,
    AWS_DEFAULT_REGION: config.region,
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_MAX_ATTEMPTS: '1',
  };
}

/** `aws <args>` against the sandbox with its own key and endpoint, as JSON: what an agent's own tools would see. */
export async function awsCli(config: ClientConfig, args: readonly string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('aws', ['--endpoint-url', config.endpoint, '--output', 'json', ...args], { env: awsCliEnv(config), timeout: 60_000 });
  return stdout;
}
