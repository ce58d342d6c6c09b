import { StoreClient } from '../../src/client/store-client';
import { secretOfOtpauthUri, totpCode, totpStep, TOTP_STEP_SECONDS } from '../../src/crypto/totp';
import type { TestWorker } from '../harness/test-worker';

/**
 * An enrolled approver's authenticator, for tests: `code()` is what their app shows
 * now. Each code counts once, so a second approval in the same 30 s gets the next
 * step's code (still inside the ±1 step window); a third waits for the clock.
 */
export interface TestAuthenticator {
  readonly name: string;
  readonly otpauthUri: string;
  code(): Promise<string>;
}

export function authenticatorFor(name: string, otpauthUri: string): TestAuthenticator {
  const secret = secretOfOtpauthUri(otpauthUri);
  let lastStep = -1;
  return {
    name,
    otpauthUri,
    async code() {
      for (;;) {
        const now = totpStep(Date.now());
        const step = Math.max(now, lastStep + 1);
        if (step <= now + 1) {
          lastStep = step;
          return totpCode(secret, step);
        }
        await new Promise((resolve) => setTimeout(resolve, (TOTP_STEP_SECONDS * 1000) / 3));
      }
    },
  };
}

/** Enrols `name` through the store worker (the `approvers.add` store command), as `sandboxctl approvers add` does. */
export async function enrolApprover(worker: Pick<TestWorker, 'client' | 'config'>, name: string): Promise<TestAuthenticator> {
  const store = new StoreClient({ client: worker.client, taskQueue: worker.config.taskQueue });
  const { otpauthUri } = await store.addApprover(name);
  return authenticatorFor(name, otpauthUri);
}

/** A six-digit code that is not `code`: a guess that is surely wrong. */
export function wrongCode(code: string): string {
  return code === '000000' ? '111111' : '000000';
}
