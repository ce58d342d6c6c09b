import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';

export const portSchema = z.coerce
  .number({ invalid_type_error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(65535, 'must be at most 65535');

export const fileSchema = z.string().trim().min(1, 'must name a file');

function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
}

/**
 * Validates a command's options (as commander parsed them) and names every bad flag
 * in one INVALID_INPUT error, e.g. "--ui-port must be at most 65535, got 99999".
 */
export function parseCliOptions<S extends z.ZodTypeAny>(schema: S, raw: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const key = String(issue.path[0] ?? '');
    return `${flagName(key)} ${issue.message}, got '${String(raw[key])}'`;
  });
  throw new SandboxPlaneError('INVALID_INPUT', problems.join('; '), { details: { flags: parsed.error.issues.map((i) => i.path.join('.')) } });
}
