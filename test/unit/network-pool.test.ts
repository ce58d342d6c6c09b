import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig, ConfigError } from '../../src/config/config';
import { sandboxNetworkName } from '../../src/domain/docker-labels';
import { isPooledNetworkName, networkPoolId } from '../../src/domain/network-pool';

describe('pre-made sealed networks: names and SANDBOXPLANE_NETWORK_POOL', () => {
  test('a pooled network is named like a sandbox network, under a pool id no sandbox id can be', () => {
    const name = sandboxNetworkName('plane-1', networkPoolId('0123456789abcdef'));
    assert.equal(name, `${sandboxNetworkName('plane-1', '')}netpool.0123456789ab`);
    assert.ok(isPooledNetworkName('plane-1', name));
    assert.ok(!isPooledNetworkName('plane-2', name), "another plane's is not this plane's");
    assert.ok(!isPooledNetworkName('plane-1', sandboxNetworkName('plane-1', 'sb-1')), "a sandbox's own network is not pooled");
    assert.ok(!isPooledNetworkName('plane-1', sandboxNetworkName('plane-1', 'pool.moto.0123456789ab')), "a warm pool slot's is not");
  });

  test('two networks by default; 0 turns the pool off; past 20 or not a count is refused, naming the variable', () => {
    assert.equal(loadConfig({}).networkPool, 2);
    assert.equal(loadConfig({ SANDBOXPLANE_NETWORK_POOL: '0' }).networkPool, 0);
    assert.equal(loadConfig({ SANDBOXPLANE_NETWORK_POOL: '20' }).networkPool, 20);
    for (const bad of ['21', '-1', 'two', '1.5']) {
      assert.throws(
        () => loadConfig({ SANDBOXPLANE_NETWORK_POOL: bad }),
        (err: unknown) => err instanceof ConfigError && /SANDBOXPLANE_NETWORK_POOL/.test(err.message) && /from 0 to 20/.test(err.message),
        bad,
      );
    }
  });
});
