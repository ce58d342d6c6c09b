/** Warm pools' rules without an engine: the variable, who owns a container, capacity, the broker's label rule. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/config';
import { validateContainerSpec } from '../../src/docker/spec-rules';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ADAPTER_LABEL, SANDBOX_ID_LABEL } from '../../src/domain/docker-labels';
import { belongsTo, containerNameFor, containerOwner, parseWarmPoolTargets, POOL_LABEL, poolSlotId } from '../../src/domain/warm-pool';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-pools-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function configIssue(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

describe('SANDBOXPLANE_WARM_POOL', () => {
  test('unset or empty is no pool; moto=2 is two idle moto containers per host', () => {
    assert.deepEqual(loadConfig({}).host.warmPool, {});
    assert.deepEqual(loadConfig({ SANDBOXPLANE_WARM_POOL: '' }).host.warmPool, {});
    assert.deepEqual(loadConfig({ SANDBOXPLANE_WARM_POOL: 'moto=2' }).host.warmPool, { moto: 2 });
    assert.deepEqual(parseWarmPoolTargets(' moto=0 '), { moto: 0 });
  });

  test('a bad value is refused naming what to fix', () => {
    assert.match(configIssue({ SANDBOXPLANE_WARM_POOL: 'moto' }), /SANDBOXPLANE_WARM_POOL: "moto" is not adapter=count \(example: moto=2\)/);
    assert.match(configIssue({ SANDBOXPLANE_WARM_POOL: 'floci=1' }), /the floci adapter cannot be pooled: its emulator has no state reset/);
    assert.match(configIssue({ SANDBOXPLANE_WARM_POOL: 'memory=1' }), /the memory adapter cannot be pooled/);
    assert.match(configIssue({ SANDBOXPLANE_WARM_POOL: 'lambda=1' }), /unknown adapter "lambda"/);
    assert.match(configIssue({ SANDBOXPLANE_WARM_POOL: 'moto=51' }), /more than 50 idle containers/);
    assert.match(configIssue({ SANDBOXPLANE_WARM_POOL: 'moto=1,moto=2' }), /moto is named twice/);
  });

  test('a pool that would take the whole capacity is refused: its idle containers hold capacity', () => {
    assert.match(
      configIssue({ SANDBOXPLANE_WARM_POOL: 'moto=3', SANDBOXPLANE_HOST_CAPACITY: '3' }),
      /SANDBOXPLANE_WARM_POOL: its 3 idle containers would take all 3 of SANDBOXPLANE_HOST_CAPACITY/,
    );
    assert.deepEqual(loadConfig({ SANDBOXPLANE_WARM_POOL: 'moto=2', SANDBOXPLANE_HOST_CAPACITY: '3' }).host, {
      id: 'local',
      capacity: 3,
      warmPool: { moto: 2 },
      memoryFraction: 0.9,
      memoryOvercommit: 3,
    });
  });
});

describe('who owns a container', () => {
  const plane = 'default-0123456789abcdef';
  const slot = poolSlotId('moto', 'a1b2c3d4e5f6a7b8');
  const pooled = { [POOL_LABEL]: 'moto', [SANDBOX_ID_LABEL]: slot };

  test('a slot id can never be a sandbox id, and names follow the plane', () => {
    assert.equal(slot, 'pool.moto.a1b2c3d4e5f6');
    assert.match(containerNameFor(plane, 'demo'), /^sandboxplane-[0-9a-f]{8}-demo$/);
    assert.equal(containerNameFor(undefined, 'demo'), 'sandboxplane-demo');
  });

  test('an idle pool container belongs to its slot; once renamed, to the sandbox that claimed it', () => {
    assert.deepEqual(containerOwner({ name: containerNameFor(plane, slot), labels: pooled }), { poolSlotId: slot });
    const claimed = { name: containerNameFor(plane, 'agent-box-1'), labels: pooled };
    assert.deepEqual(containerOwner(claimed), { sandboxId: 'agent-box-1' });
    assert.equal(belongsTo(claimed, 'agent-box-1'), true);
    assert.equal(belongsTo(claimed, 'agent-box-2'), false);
  });

  test('a container from no pool belongs to its label, whatever its name', () => {
    assert.deepEqual(containerOwner({ name: 'anything', labels: { [SANDBOX_ID_LABEL]: 'x1' } }), { sandboxId: 'x1' });
    assert.deepEqual(containerOwner({ name: 'anything', labels: {} }), { unknown: true });
    // A pooled container someone renamed by hand is nobody's idle slot: the sweep may judge it.
    assert.deepEqual(containerOwner({ name: 'by-hand', labels: pooled }), { unknown: true });
  });

  test('the broker takes a slot id as sandbox-id only on a pool container', () => {
    const spec = (labels: Record<string, string>) => ({
      image: `sha256:${'a'.repeat(64)}`,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [ADAPTER_LABEL]: 'moto', ...labels },
      limits: { memoryBytes: 64 * 1024 * 1024, pidsLimit: 64, nanoCpus: 500_000_000, logMaxBytes: 1024 * 1024, logFiles: 2 },
    });
    assert.doesNotThrow(() => validateContainerSpec(spec({ [SANDBOX_ID_LABEL]: slot, [POOL_LABEL]: 'moto' })));
    assert.throws(() => validateContainerSpec(spec({ [SANDBOX_ID_LABEL]: slot })), /sandbox-id/);
  });
});

describe('capacity with a warm pool', () => {
  test("a host's idle pool containers hold capacity: placement never counts them as free", () => {
    const store = Store.open(path.join(dir, 'placement.sqlite'));
    store.hosts.register({ hostId: 'a', taskQueue: 'q-docker-a', adapters: ['moto'], capacity: 3, warmPool: { moto: 2 }, engineId: null, identity: 'w-a' });
    const place = (id: string) => {
      store.sandboxes.record(projectionSnapshot({ id, state: 'PROVISIONING', adapter: 'moto' }), { step: 1, action: 'requested', actor: 'a', effect: 'e', reason: null, summary: {} });
      return store.hosts.place({ sandboxId: id, adapter: 'moto', liveHostIds: new Set(['a']) });
    };
    assert.deepEqual(place('p1'), { placement: { hostId: 'a', taskQueue: 'q-docker-a' }, fresh: true });
    assert.deepEqual(place('p2'), { refused: 'no live docker host has room for a moto sandbox (a 3/3 with 2 kept warm)', roomComing: true });
    assert.deepEqual(store.hosts.list()[0]?.warmPool, { moto: 2 });
    store.close();
  });
});
