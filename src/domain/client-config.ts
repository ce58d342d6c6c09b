import type { AdapterName } from './service-catalog';

/**
 * Settings an agent passes to an AWS SDK v3 client to reach its sandbox. Credentials
 * are fake and static: emulators accept any, and nothing real is ever handed out.
 */
export interface ClientConfig {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly forcePathStyle: true;
}

/**
 * The fake credentials of each adapter. They live only here: the client config is
 * assembled when status is asked for, so they never enter a workflow history, a log
 * line or the projection. Floci reads a 12-digit access key as the account id.
 */
const FAKE_CREDENTIALS: Readonly<Record<AdapterName, ClientConfig['credentials']>> = {
  memory: { accessKeyId: 'sandboxplane-memory', secretAccessKey: 'sandboxplane-fake-memory-secret' },
  moto: { accessKeyId: 'SBXPLANEFAKEMOTO0001', secretAccessKey: 'sandboxplane-fake-moto-secret-not-real' },
  floci: { accessKeyId: '000000000000', secretAccessKey: 'sandboxplane-fake-floci-secret-not-real' },
};

export function clientConfigFor(adapter: AdapterName, endpoint: string, region: string): ClientConfig {
  return { endpoint, region, credentials: FAKE_CREDENTIALS[adapter], forcePathStyle: true };
}

/** For tests and redaction checks: every fake secret value we hand out. */
export function fakeCredentialValues(): string[] {
  return Object.values(FAKE_CREDENTIALS).flatMap((credentials) => [credentials.accessKeyId, credentials.secretAccessKey]);
}
