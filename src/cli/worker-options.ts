import { z } from 'zod';
import { ConfigError, loadConfig, type Config } from '../config/config';
import { SandboxPlaneError } from '../domain/errors';

/** `sandboxctl worker`'s flags; each is checked by the rule of the variable it overrides (one home for each rule). */
// An empty flag would read as unset (the default: every role), so it is refused here.
const given = z.string().trim().min(1, 'must not be empty');
export const workerOptionsSchema = z.object({
  role: given.optional(),
  hostId: given.optional(),
  capacity: given.optional(),
  buildId: given.optional(),
});

const FLAG_VARIABLES = {
  role: 'SANDBOXPLANE_WORKER_ROLES',
  hostId: 'SANDBOXPLANE_HOST_ID',
  capacity: 'SANDBOXPLANE_HOST_CAPACITY',
  buildId: 'SANDBOXPLANE_BUILD_ID',
} as const;

const FLAG_NAMES: Readonly<Record<string, string>> = {
  SANDBOXPLANE_WORKER_ROLES: '--role',
  SANDBOXPLANE_HOST_ID: '--host-id',
  SANDBOXPLANE_HOST_CAPACITY: '--capacity',
  SANDBOXPLANE_BUILD_ID: '--build-id',
};

/**
 * The configuration with the flags in place of their variables. A bad flag is reported
 * as the flag (INVALID_INPUT, exit 2), not as the variable it stands for.
 */
export function workerConfig(options: z.infer<typeof workerOptionsSchema>, env: NodeJS.ProcessEnv = process.env): Config {
  const given = Object.entries(FLAG_VARIABLES).filter(([flag]) => options[flag as keyof typeof FLAG_VARIABLES] !== undefined);
  const overrides = Object.fromEntries(given.map(([flag, variable]) => [variable, options[flag as keyof typeof FLAG_VARIABLES]]));
  try {
    return loadConfig({ ...env, ...overrides });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const fromFlags = err.issues.filter((issue) => issue.key in overrides);
    if (fromFlags.length === 0) throw err;
    throw new SandboxPlaneError('INVALID_INPUT', fromFlags.map((issue) => `${FLAG_NAMES[issue.key]}: ${issue.message}`).join('; '), {
      hint: 'Fix the flag (`sandboxctl worker --help` lists what each takes).',
    });
  }
}
