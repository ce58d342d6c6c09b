import { overrideConfig, type Config } from './config';
import { FEATURE_FLAG_NAMES, FEATURE_FLAGS, flagEnvName, type FeatureFlag } from '../domain/feature-flags';

/**
 * For the dev launcher: turns on the flags marked `local` that the environment does
 * not set either way, and says which, so nothing is enabled silently.
 */
export function enableLocalFlags(config: Config, env: Readonly<Record<string, string | undefined>> = process.env): { config: Config; enabled: FeatureFlag[] } {
  const enabled = FEATURE_FLAG_NAMES.filter((flag) => FEATURE_FLAGS[flag].local && (env[flagEnvName(flag)] ?? '') === '' && !config.flags[flag]);
  const flags = Object.fromEntries(enabled.map((flag) => [flag, true])) as Partial<Record<FeatureFlag, boolean>>;
  return { config: overrideConfig(config, { flags: { ...config.flags, ...flags } }), enabled };
}
