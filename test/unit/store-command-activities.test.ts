/**
 * The store role's command activity against a real SQLite file: it validates what a
 * workflow hands it, dispatches by kind, and fails with taxonomy types. Needs neither
 * Docker nor Temporal.
 */
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/config';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createStoreCommandActivities } from '../../src/activities/store-command-activities';
import { newRecipient } from '../../src/crypto/sealed-box';
import { SecretBox } from '../../src/crypto/secret-box';
import type { SealedText } from '../../src/domain/sealed-text';
import type { HostRegistration, HostView } from '../../src/domain/hosts';
import { storeCommandSchema } from '../../src/domain/store-commands';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';
import type { HostDirectory } from '../../src/store/host-directory';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-store-commands-'));
const store = Store.open(path.join(dir, 'plane.sqlite'));
after(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Keeps registrations in memory: the activity's part is the dispatch, not the registry. */
class InMemoryHosts implements HostDirectory {
  readonly registered: HostView[] = [];
  async list(): Promise<HostView[]> {
    return this.registered;
  }
  async register(registration: HostRegistration): Promise<HostView> {
    const view: HostView = {
      hostId: registration.hostId,
      taskQueue: registration.taskQueue,
      capacity: registration.capacity,
      warmPool: registration.warmPool ?? {},
      adapters: registration.adapters,
      engineId: registration.engineId,
      live: true,
      lastSeenAt: null,
      liveSandboxes: 0,
      engineMemoryBytes: registration.memory?.engineBytes ?? null,
      memoryCapacityBytes: registration.memory?.capacityBytes ?? null,
      memoryUsedBytes: 0,
      memoryRequestedBytes: 0,
      memoryLimitCapacityBytes: null,
      registeredAt: new Date().toISOString(),
    };
    this.registered.push(view);
    return view;
  }
  async remove(hostId: string): Promise<HostView> {
    const index = this.registered.findIndex((host) => host.hostId === hostId);
    const [removed] = this.registered.splice(index, 1);
    if (index < 0 || removed === undefined) throw new Error(`no host ${hostId}`);
    return removed;
  }
}

const hosts = new InMemoryHosts();
const flags = loadConfig({ SANDBOXPLANE_FLAG_IAC_LOCAL: '1' }).flags;
const { runStoreCommand } = createStoreCommandActivities({
  store,
  hosts,
  secrets: SecretBox.fromKeyFile(path.join(dir, 'store.key')),
  flags,
});

async function failureOf(command: unknown): Promise<ApplicationFailure> {
  try {
    await runStoreCommand(command);
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, `an ApplicationFailure, got ${String(err)}`);
    return err;
  }
  assert.fail(`${JSON.stringify(command)} succeeded`);
}

describe('runStoreCommand', () => {
  test('policy add, list and remove reach the store', async () => {
    const added = (await runStoreCommand({ kind: 'policy.add', principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow', services: ['s3'] })) as {
      id: number;
      maxTtlSeconds: number | null;
      services: string[] | null;
    };
    assert.deepEqual([added.maxTtlSeconds, added.services], [null, ['s3']]);
    assert.deepEqual(
      store.policies.list().map((row) => row.id),
      [added.id],
    );
    const listed = (await runStoreCommand({ kind: 'policy.list' })) as { policies: { id: number }[] };
    assert.deepEqual(
      listed.policies.map((row) => row.id),
      [added.id],
    );
    assert.equal(((await runStoreCommand({ kind: 'policy.remove', id: added.id })) as { id: number }).id, added.id);
    assert.deepEqual(store.policies.list(), []);
  });

  test('approvers: add enrols a TOTP secret sealed to the caller; a retry gets the same; another caller cannot re-enrol; remove, then NOT_FOUND', async () => {
    const cli = newRecipient();
    const added = (await runStoreCommand({ kind: 'approvers.add', name: 'alice', recipient: cli.publicKey })) as { name: string; addedAt: string; enrolment: SealedText };
    const uri = cli.open(added.enrolment);
    assert.match(uri, /^otpauth:\/\/totp\/Cloud%20Sandbox%20Plane:alice\?secret=[A-Z2-7]{32}&issuer=Cloud\+Sandbox\+Plane&algorithm=SHA1&digits=6&period=30$/);
    const secret = new URL(uri).searchParams.get('secret') as string;
    const row = JSON.stringify(store.db.prepare("SELECT * FROM approvers WHERE name = 'alice'").get());
    assert.ok(!row.includes(secret), 'the store holds the secret sealed, never in clear');
    assert.ok(!JSON.stringify(added).includes(secret), 'the command result (kept in history) holds it sealed to the caller only');

    const retried = (await runStoreCommand({ kind: 'approvers.add', name: 'alice', recipient: cli.publicKey })) as { enrolment: SealedText };
    assert.equal(cli.open(retried.enrolment), uri, 'a retry of the same enrolment gets the same secret');
    const again = await failureOf({ kind: 'approvers.add', name: 'alice', recipient: newRecipient().publicKey });
    assert.equal(again.type, 'INVALID_STATE');
    assert.match(again.message, /already enrolled/);
    assert.equal((await failureOf({ kind: 'approvers.add', name: 'bob', recipient: 'A'.repeat(60) })).type, 'INVALID_INPUT');

    const record = { name: 'alice', addedAt: added.addedAt };
    assert.deepEqual(await runStoreCommand({ kind: 'approvers.list' }), { approvers: [record] });
    assert.deepEqual(await runStoreCommand({ kind: 'approvers.remove', name: 'alice' }), record);
    const missing = await failureOf({ kind: 'approvers.remove', name: 'alice' });
    assert.equal(missing.type, 'NOT_FOUND');
    assert.equal(missing.nonRetryable, true);
    assert.match(String((missing.details?.[0] as { hint?: string }).hint), /approvers list/);
  });

  test('audit of an unknown sandbox is NOT_FOUND; leaks and hosts answer with their documented shapes', async () => {
    assert.equal((await failureOf({ kind: 'audit', sandboxId: 'nosuch' })).type, 'NOT_FOUND');
    assert.deepEqual(await runStoreCommand({ kind: 'leaks' }), { leaks: [] });
    const registration: HostRegistration = { hostId: 'local', taskQueue: 'tq-docker-local', adapters: ['memory'], capacity: 4, engineId: null, identity: 'w1' };
    assert.equal(((await runStoreCommand({ kind: 'hosts.register', registration })) as HostView).hostId, 'local');
    const { hosts: listed } = (await runStoreCommand({ kind: 'hosts' })) as { hosts: HostView[] };
    assert.deepEqual(
      listed.map((host) => [host.hostId, host.capacity]),
      [['local', 4]],
    );
  });

  test("keys: add keeps the hash it is given (a retry keeps the first row), list shows no hash, revoke marks it once; another principal's audit is NOT_FOUND", async () => {
    const hash = `scrypt$32768$8$1$${'a'.repeat(22)}$${'b'.repeat(43)}`;
    const added = await runStoreCommand({ kind: 'keys.add', keyId: '0123456789ab', principal: 'agent-k', secretHash: hash });
    assert.deepEqual(await runStoreCommand({ kind: 'keys.add', keyId: '0123456789ab', principal: 'agent-k', secretHash: hash }), added);
    assert.equal((added as { ratePerMinute: number }).ratePerMinute, 120);
    const { keys } = (await runStoreCommand({ kind: 'keys.list' })) as { keys: Record<string, unknown>[] };
    assert.deepEqual(
      keys.map((key) => [key.keyId, key.principal, key.revokedAt, 'secretHash' in key]),
      [['0123456789ab', 'agent-k', null, false]],
    );
    const revoked = (await runStoreCommand({ kind: 'keys.revoke', keyId: '0123456789ab' })) as { revokedAt: string };
    assert.ok(revoked.revokedAt !== null);
    assert.deepEqual(await runStoreCommand({ kind: 'keys.revoke', keyId: '0123456789ab' }), revoked, 'revoked once');
    assert.equal((await failureOf({ kind: 'keys.revoke', keyId: 'ffffffffffff' })).type, 'NOT_FOUND');
    assert.equal((await failureOf({ kind: 'keys.add', keyId: 'short', principal: 'agent-k', secretHash: hash })).type, 'INVALID_INPUT');

    store.sandboxes.record(projectionSnapshot({ id: 'sbx-k', principal: 'agent-k', state: 'READY' }), { step: 1, action: 'ready', actor: 'w', effect: 'ready', reason: null, summary: {} });
    assert.ok(store.sandboxes.exists('sbx-k'));
    assert.equal(((await runStoreCommand({ kind: 'audit', sandboxId: 'sbx-k', principal: 'agent-k' })) as { sandboxId: string }).sandboxId, 'sbx-k');
    assert.equal((await failureOf({ kind: 'audit', sandboxId: 'sbx-k', principal: 'agent-other' })).type, 'NOT_FOUND');
  });

  test("iac.screen is policy's verdict over the template's services before a run starts; an unknown target is left to the run to report", async () => {
    const allow = (await runStoreCommand({ kind: 'policy.add', principalPattern: 'agent-screen', capability: 'cloud.iac.local', effect: 'allow' })) as { id: number };
    const row = (await runStoreCommand({ kind: 'policy.add', principalPattern: 'agent-screen', capability: 'cloud.iac.local', effect: 'deny', services: ['sqs'] })) as { id: number };
    try {
      const denied = (await runStoreCommand({ kind: 'iac.screen', principal: 'agent-screen', services: ['s3', 'sqs'] })) as { effect: string; code?: string };
      assert.deepEqual([denied.effect, denied.code], ['deny', 'POLICY_DENIED']);
      const other = (await runStoreCommand({ kind: 'iac.screen', principal: 'agent-screen', services: ['s3'] })) as { effect: string; code?: string };
      assert.equal(other.effect, 'allow', 'only the services the row names are refused');
      const staging = (await runStoreCommand({ kind: 'iac.screen', principal: 'agent-screen', services: ['s3'], target: 'no-such-target' })) as { effect: string };
      assert.equal(staging.effect, 'allow');
    } finally {
      await runStoreCommand({ kind: 'policy.remove', id: row.id });
      await runStoreCommand({ kind: 'policy.remove', id: allow.id });
    }
  });

  test('a malformed command is INVALID_INPUT naming what to fix, and changes nothing', async () => {
    const cases: [unknown, RegExp][] = [
      [{ kind: 'policy.drop' }, /kind/],
      [{ kind: 'policy.add', principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'maybe' }, /effect/],
      [{ kind: 'policy.add', principalPattern: 'a b', capability: 'cloud.sandbox', effect: 'allow', maxTtlSeconds: -1 }, /principalPattern.*maxTtlSeconds|maxTtlSeconds.*principalPattern/],
      [{ kind: 'policy.remove', id: 0 }, /id: must be at least 1/],
      [{ kind: 'approvers.add', name: '', recipient: newRecipient().publicKey }, /name/],
      [{ kind: 'approvers.add', name: 'carol' }, /recipient/],
      [{ kind: 'audit', sandboxId: 'Not An Id' }, /sandboxId/],
      [{ kind: 'hosts.register', registration: { hostId: 'UPPER' } }, /registration\.hostId/],
      [{ kind: 'leaks', extra: true }, /extra/],
      ['policy.list', /kind|object/],
    ];
    for (const [command, names] of cases) {
      const failure = await failureOf(command);
      assert.equal(failure.type, 'INVALID_INPUT', JSON.stringify(command));
      assert.equal(failure.nonRetryable, true);
      assert.match(failure.message, names, JSON.stringify(command));
    }
    assert.deepEqual(store.policies.list(), []);
  });

  test('the client and the worker read one schema: every kind the client sends parses', () => {
    const kinds = storeCommandSchema.options.map((option) => option.shape.kind.value);
    assert.deepEqual(kinds.sort(), [
      'approvers.add',
      'approvers.list',
      'approvers.remove',
      'audit',
      'audit.export',
      'audit.verify',
      'events',
      'hosts',
      'hosts.register',
      'hosts.remove',
      'iac.screen',
      'keys.add',
      'keys.list',
      'keys.revoke',
      'leaks',
      'policy.add',
      'policy.list',
      'policy.remove',
      'sandboxes.tree',
      'snapshots.delete',
      'snapshots.get',
      'snapshots.list',
      'targets.add',
      'targets.audit',
      'targets.get',
      'targets.list',
      'targets.remove',
      'usage',
      'webhooks.add',
      'webhooks.deliveries',
      'webhooks.list',
      'webhooks.remove',
    ]);
  });
});
