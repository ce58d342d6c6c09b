import { z } from 'zod';
import { parseDuration } from '../domain/duration';
import { SandboxPlaneError } from '../domain/errors';

export const portSchema = z.coerce.number({ invalid_type_error: 'must be a number' }).int('must be a whole number').min(1, 'must be at least 1').max(65535, 'must be at most 65535');

export const fileSchema = z.string().trim().min(1, 'must name a file');

/** `90s`, `30m`, `2h` or `1d`, as seconds. */
export const durationSchema = z.string().transform((text, ctx) => {
  const seconds = parseDuration(text);
  if (seconds === undefined) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be a duration such as 90s, 30m or 2h' });
    return z.NEVER;
  }
  return seconds;
});

/** `s3,sqs` → `['s3', 'sqs']` (blanks dropped); pipe into the schema of the items. */
export const commaListSchema = z.string().transform((text) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

/** A whole number of at least `min`, from the text commander hands over. */
export function wholeNumberSchema(min: number) {
  return z.coerce.number({ invalid_type_error: 'must be a whole number' }).int('must be a whole number').min(min, `must be at least ${min}`);
}

/** One of `values`, with an error that lists them. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { errorMap: () => ({ message: `must be one of ${values.join(', ')}` }) });
}

export function flagName(key: string): string {
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
    if (raw[key] === undefined) return `${flagName(key)} is required`;
    return `${flagName(key)} ${issue.message}, got '${String(raw[key])}'`;
  });
  throw new SandboxPlaneError('INVALID_INPUT', [...new Set(problems)].join('; '), {
    details: { flags: parsed.error.issues.map((i) => i.path.join('.')) },
  });
}

/** Validates a positional argument, naming it: "ID must be a whole number, got 'x'". */
export function parseCliArgument<S extends z.ZodTypeAny>(schema: S, value: unknown, name: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new SandboxPlaneError('INVALID_INPUT', `${name} ${parsed.error.issues[0]?.message ?? 'is invalid'}, got '${String(value)}'`);
}
