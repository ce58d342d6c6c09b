/**
 * The clients' shared base (src/client/plane-client.ts): one connection, queue and
 * caller for `SandboxClient` and the sub-clients reached from it, and a caller checked
 * before anything is opened.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { SandboxClient } from '../../src/client/sandbox-client';
import { StoreClient } from '../../src/client/store-client';
import { SandboxPlaneError } from '../../src/domain/errors';

const hasCode = (code: string) => (err: unknown) => err instanceof SandboxPlaneError && err.code === code;

/** A Temporal client that records the store commands started through it, answering each with `answer`. */
function recordingClient(answer: unknown) {
  const started: { workflowType: string; args: unknown[]; taskQueue: string }[] = [];
  const client = {
    workflow: {
      execute: (workflowType: string, options: { args: unknown[]; taskQueue: string }) => {
        started.push({ workflowType, args: options.args, taskQueue: options.taskQueue });
        return Promise.resolve(answer);
      },
    },
  } as unknown as Client;
  return { client, started };
}

describe('plane clients: one base, sub-clients as the same caller', () => {
  test('sandboxes.store and sandboxes.iac act as the sandbox client does, on its queue', async () => {
    const { client, started } = recordingClient({ rows: [] });
    const sandboxes = new SandboxClient({ client, taskQueue: 'tq-a', principal: 'agent-7' });
    assert.equal(sandboxes.store.principal, 'agent-7');
    assert.equal(sandboxes.iac.principal, 'agent-7');
    // A bound store is refused operator commands before anything is sent...
    await assert.rejects(sandboxes.store.listPolicies(), hasCode('PRINCIPAL_MISMATCH'));
    assert.equal(started.length, 0);
    // ...and reads only its own usage, whatever the filter asks.
    assert.deepEqual(await sandboxes.usage({ principal: 'agent-8' }), []);
    await sandboxes.usage();
    assert.deepEqual(started, [{ workflowType: 'storeCommand', args: [{ kind: 'usage', principal: 'agent-7' }], taskQueue: 'tq-a' }]);

    const operator = new SandboxClient({ client, taskQueue: 'tq-a' });
    assert.equal(operator.store.principal, undefined);
  });

  test('connect refuses a malformed principal before opening a connection', async () => {
    // Nothing listens on port 1: reaching the connect would be TEMPORAL_UNREACHABLE, not INVALID_INPUT.
    const options = { address: '127.0.0.1:1', namespace: 'default', taskQueue: 'tq', principal: 'Not A Principal!', payloadCodec: null, tls: null };
    await assert.rejects(SandboxClient.connect(options), hasCode('INVALID_INPUT'));
    await assert.rejects(StoreClient.connect(options), hasCode('INVALID_INPUT'));
  });
});
