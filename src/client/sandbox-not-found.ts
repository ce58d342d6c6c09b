import { SandboxPlaneError } from '../domain/errors';

/** No sandbox with this id, or none this caller may see: one message for both, so a bound caller learns nothing of others' ids. */
export function sandboxNotFound(sandboxId: string): SandboxPlaneError {
  return new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId}`, { details: { sandboxId } });
}
