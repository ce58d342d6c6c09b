import { z } from 'zod';

/**
 * Sandbox ids become workflow ids (`sandbox-<id>`), container labels and file names, so
 * the SDK, the workflow and the broker's spec rules all check this one pattern.
 */
export const SANDBOX_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

export const sandboxIdSchema = z.string().regex(SANDBOX_ID_PATTERN, 'must be 1-63 lowercase letters, digits or dashes, starting with a letter or digit');
