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
