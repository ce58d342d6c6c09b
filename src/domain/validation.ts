import type { z } from 'zod';
import { SandboxPlaneError } from './errors';

/** `services[1]: must be a service name…; ttlSeconds: must be positive` — every problem, each with its path. */
export function describeIssues(issues: readonly z.ZodIssue[]): string {
  return issues
    .map((issue) => {
      const where = issue.path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text === '' ? String(part) : `${text}.${part}`), '');
      return where === '' ? issue.message : `${where}: ${issue.message}`;
    })
    .join('; ');
}

/** Parses `value` or throws one INVALID_INPUT error naming every bad field of `what`. */
export function parseOrThrow<S extends z.ZodTypeAny>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new SandboxPlaneError('INVALID_INPUT', `invalid ${what}: ${describeIssues(parsed.error.issues)}`, {
    details: { fields: parsed.error.issues.map((issue) => issue.path.join('.')) },
  });
}
