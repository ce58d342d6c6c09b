import type { SandboxSnapshot } from '../../src/store';

/** A projection row as a lifecycle would write it; tests override what they are about. */
export function projectionSnapshot(overrides: Partial<SandboxSnapshot> & Pick<SandboxSnapshot, 'id'>): SandboxSnapshot {
  return {
    workflowId: `sandbox-${overrides.id}`,
    runId: 'a-run-of-the-test',
    principal: 'agent-1',
    capability: 'cloud.sandbox',
    adapter: 'memory',
    services: ['s3'],
    state: 'PROVISIONING',
    purpose: null,
    labels: {},
    requestDigest: 'sha256:test',
    endpoint: null,
    expiresAt: null,
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}
