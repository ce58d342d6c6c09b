/** The plane id (DESIGN §11, issue 12): from configuration, or from Temporal's own ids — never from the address's spelling. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { derivePlaneId, PLANE_ID_PATTERN } from '../../src/domain/docker-labels';
import { SandboxPlaneError } from '../../src/domain/errors';
import { resolvePlaneId, type PlaneIdentitySource } from '../../src/worker/plane-identity';

const CLUSTER = '6709c95e-14c1-4aef-a2d0-dbb6e9c04104';
const NAMESPACE_ID = '01a23bb7-c336-77cb-a6a0-57f4e94120f6';

function frontend(clusterId: string, namespaceId: string | undefined, seen: string[] = []): PlaneIdentitySource {
  return {
    getClusterInfo: async () => ({ clusterId }),
    describeNamespace: async (request) => {
      seen.push(request.namespace);
      return { namespaceInfo: namespaceId === undefined ? null : { id: namespaceId } };
    },
  };
}

describe('plane id', () => {
  test('derived: readable, label-safe, stable, and another cluster or namespace is another plane', () => {
    const id = derivePlaneId({ namespace: 'default', clusterId: CLUSTER, namespaceId: NAMESPACE_ID });
    assert.match(id, /^default-[0-9a-f]{16}$/);
    assert.match(id, PLANE_ID_PATTERN);
    assert.equal(derivePlaneId({ namespace: 'default', clusterId: CLUSTER, namespaceId: NAMESPACE_ID }), id);
    assert.notEqual(derivePlaneId({ namespace: 'default', clusterId: 'another-dev-server', namespaceId: NAMESPACE_ID }), id);
    assert.notEqual(derivePlaneId({ namespace: 'default', clusterId: CLUSTER, namespaceId: 'recreated' }), id);
    assert.match(derivePlaneId({ namespace: '_odd', clusterId: CLUSTER, namespaceId: NAMESPACE_ID }), PLANE_ID_PATTERN);
  });

  test('the address is no part of it: 127.0.0.1:P and localhost:P give one plane', async () => {
    const seen: string[] = [];
    const a = await resolvePlaneId({ planeId: undefined, temporalNamespace: 'default', temporalAddress: '127.0.0.1:7233' }, frontend(CLUSTER, NAMESPACE_ID, seen));
    const b = await resolvePlaneId({ planeId: undefined, temporalNamespace: 'default', temporalAddress: 'localhost:7233' }, frontend(CLUSTER, NAMESPACE_ID));
    assert.equal(a, b);
    assert.equal(a, derivePlaneId({ namespace: 'default', clusterId: CLUSTER, namespaceId: NAMESPACE_ID }));
    assert.deepEqual(seen, ['default']);
  });

  test('SANDBOXPLANE_PLANE_ID wins, and Temporal is not asked', async () => {
    const silent: PlaneIdentitySource = {
      getClusterInfo: () => assert.fail('not asked'),
      describeNamespace: () => assert.fail('not asked'),
    };
    assert.equal(await resolvePlaneId({ planeId: 'ci-job-42', temporalNamespace: 'default', temporalAddress: 'x:1' }, silent), 'ci-job-42');
  });

  test('a frontend that does not say its ids is an error that names the way out', async () => {
    await assert.rejects(
      resolvePlaneId({ planeId: undefined, temporalNamespace: 'default', temporalAddress: 'x:1' }, frontend('', NAMESPACE_ID)),
      (err: unknown) => err instanceof SandboxPlaneError && err.code === 'TEMPORAL_UNREACHABLE' && /SANDBOXPLANE_PLANE_ID/.test(err.message),
    );
    await assert.rejects(
      resolvePlaneId({ planeId: undefined, temporalNamespace: 'default', temporalAddress: 'x:1' }, frontend(CLUSTER, undefined)),
      (err: unknown) => err instanceof SandboxPlaneError && /SANDBOXPLANE_PLANE_ID/.test(err.message),
    );
  });
});
