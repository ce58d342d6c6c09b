import type { AdapterName } from './service-catalog';

/** An access key for one sandbox's emulator: valid there only, never on real AWS. */
export interface SandboxCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/**
 * Settings an agent passes to an AWS SDK v3 client to reach its sandbox. A moto
 * sandbox's credentials are its own (minted in its emulator, which verifies them and
 * scopes them to the granted services); other adapters' are fake and static.
 */
export interface ClientConfig {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: SandboxCredentials;
  readonly forcePathStyle: true;
}

/**
 * The fake credentials of adapters whose emulators check none (memory, Floci), and of
 * moto sandboxes provisioned before credentials were minted. Floci reads a 12-digit
 * access key as the account id.
 */
const FAKE_CREDENTIALS: Readonly<Record<AdapterName, SandboxCredentials>> = {
  memory: { accessKeyId: 'sandboxplane-memory', secretAccessKey: 'sandboxplane-fake-memory-secret' },
  moto: { accessKeyId: 'SBXPLANEFAKEMOTO0001', secretAccessKey: 'sandboxplane-fake-moto-secret-not-real' },
  floci: { accessKeyId: '000000000000', secretAccessKey: 'sandboxplane-fake-floci-secret-not-real' },
};

/**
 * The client settings of a sandbox: its own `credentials` when its runtime minted some,
 * else the adapter's fake ones. Assembled when status is asked for, so the secret never
 * enters an update result, a log line or the projection.
 */
export function clientConfigFor(adapter: AdapterName, endpoint: string, region: string, credentials?: SandboxCredentials): ClientConfig {
  return {
    endpoint,
    region,
    credentials: credentials === undefined ? FAKE_CREDENTIALS[adapter] : { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    forcePathStyle: true,
  };
}

/** For tests and redaction checks: every fake secret value we hand out. */
export function fakeCredentialValues(): string[] {
  return Object.values(FAKE_CREDENTIALS).flatMap((credentials) => [credentials.accessKeyId, credentials.secretAccessKey]);
}
