/**
 * Feature flags (DESIGN §3): every one defaults off and is read only from
 * `SANDBOXPLANE_FLAG_<NAME>`. The `local` ones are safe on a developer's machine,
 * so the dev launcher turns them on unless the environment says otherwise.
 */
export const FEATURE_FLAGS = {
  CLOUD_SANDBOX: { local: true, description: 'capability cloud.sandbox: local emulator sandboxes' },
  IAC_LOCAL: { local: true, description: 'capability cloud.iac.local: apply IaC into a local sandbox' },
  STAGING_APPLY: { local: false, description: 'capability cloud.staging.apply (always needs approval)' },
  PRODUCTION_APPLY: { local: false, description: 'capability cloud.production.apply (always needs approval)' },
  ADAPTER_MEMORY: { local: true, description: 'the in-process memory adapter (tests and demos)' },
  ADAPTER_MOTO: { local: true, description: 'the moto emulator adapter (Docker)' },
  ADAPTER_FLOCI: { local: true, description: 'the Floci emulator adapter (Docker)' },
} as const satisfies Record<string, { local: boolean; description: string }>;

export type FeatureFlag = keyof typeof FEATURE_FLAGS;
export type FeatureFlags = Readonly<Record<FeatureFlag, boolean>>;

export const FLAG_ENV_PREFIX = 'SANDBOXPLANE_FLAG_';

export const FEATURE_FLAG_NAMES = Object.freeze(Object.keys(FEATURE_FLAGS) as FeatureFlag[]);

export function flagEnvName(flag: FeatureFlag): string {
  return `${FLAG_ENV_PREFIX}${flag}`;
}

export function isFeatureFlag(name: string): name is FeatureFlag {
  return Object.prototype.hasOwnProperty.call(FEATURE_FLAGS, name);
}

const TRUE_WORDS = new Set(['1', 'true', 'on', 'yes']);
const FALSE_WORDS = new Set(['0', 'false', 'off', 'no', '']);

/** Parses one flag value; `undefined` means the word is not a boolean we accept. */
export function parseFlagValue(raw: string): boolean | undefined {
  const word = raw.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  return undefined;
}
