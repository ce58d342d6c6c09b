/**
 * The SDK's one resend loop (SandboxClient.sendUpdate): which answers send an update
 * again, how often, and what the caller hears, against a client whose updates answer
 * as scripted.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { SandboxClient } from '../../src/client/sandbox-client';
import type { ErrorCode } from '../../src/domain/error-codes';
import { SandboxPlaneError } from '../../src/domain/errors';
import type { SandboxStatus } from '../../src/domain/lifecycle-messages';

const running = { id: 'sbx-1', state: 'READY', expiresAt: null } as unknown as SandboxStatus;
const ended = { id: 'sbx-1', state: 'DESTROYED', expiresAt: null } as unknown as SandboxStatus;

/** A client whose updates fail with `codes` in turn, then answer `answer`; `sends` counts them. */
function scripted(codes: readonly ErrorCode[], answer: unknown) {
  const seen = { sends: 0 };
  const handle = {
    executeUpdate: () => {
      const code = codes[seen.sends];
      seen.sends += 1;
      return code === undefined ? Promise.resolve(answer) : Promise.reject(new SandboxPlaneError(code, `scripted ${code}`));
    },
    query: () => Promise.resolve(running),
    result: () => Promise.resolve(ended),
  };
  const client = { workflow: { getHandle: () => handle } } as unknown as Client;
  return { sandboxes: new SandboxClient({ client, taskQueue: 'q' }), seen };
}

const failsWith = (code: ErrorCode) => (err: unknown) => err instanceof SandboxPlaneError && err.code === code;

describe('SandboxClient: one resend loop for every update', () => {
  test('RUN_CONTINUED sends any update again, three sends in all', async () => {
    const twice = scripted(['RUN_CONTINUED', 'RUN_CONTINUED'], []);
    assert.deepEqual(await twice.sandboxes.resources('sbx-1'), []);
    assert.equal(twice.seen.sends, 3);

    const always = scripted(['RUN_CONTINUED', 'RUN_CONTINUED', 'RUN_CONTINUED', 'RUN_CONTINUED'], []);
    await assert.rejects(always.sandboxes.resources('sbx-1'), failsWith('RUN_CONTINUED'));
    assert.equal(always.seen.sends, 3);
  });

  test('NOT_FOUND from a running sandbox sends only an idempotent update again', async () => {
    const resources = scripted(['NOT_FOUND'], []);
    await assert.rejects(resources.sandboxes.resources('sbx-1'), failsWith('NOT_FOUND'));
    assert.equal(resources.seen.sends, 1);

    const destroy = scripted(['NOT_FOUND'], ended);
    assert.equal((await destroy.sandboxes.destroy('sbx-1')).state, 'DESTROYED');
    assert.equal(destroy.seen.sends, 2);
  });

  test('an idempotent update to an ended run answers with how it ended; any other update says INVALID_STATE', async () => {
    const destroy = scripted(['INVALID_STATE'], running);
    assert.equal((await destroy.sandboxes.destroy('sbx-1')).state, 'DESTROYED');
    assert.equal(destroy.seen.sends, 1);

    const extend = scripted(['INVALID_STATE'], running);
    await assert.rejects(extend.sandboxes.extend('sbx-1', { ttlSeconds: 60 }), failsWith('INVALID_STATE'));
    assert.equal(extend.seen.sends, 1);
  });
});
