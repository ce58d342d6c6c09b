/** The sweep's classification (DESIGN §8): pure, so every case is a plain inventory. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifyInventory, type Inventory, type ManagedContainer } from '../../src/domain/leaks';
import type { SandboxState } from '../../src/domain/sandbox-states';

function container(id: string, sandboxId: string, state = 'running'): ManagedContainer {
  return { id, sandboxId, adapter: 'moto', state };
}

function row(state: SandboxState, adapter = 'moto') {
  return { state, adapter };
}

function inventory(parts: Partial<Inventory>): Inventory {
  return { containers: [], rows: {}, running: [], ...parts };
}

describe('classifyInventory', () => {
  test('a DESTROY_FAILED row whose workflow ended is stranded (retried), and its containers are orphans', () => {
    const found = classifyInventory(inventory({ containers: [container('c-failed', 'sb-failed', 'exited')], rows: { 'sb-failed': row('DESTROY_FAILED') } }));
    assert.deepEqual(
      found.orphans.map((finding) => [finding.kind, finding.subject]),
      [['orphan_container', 'c-failed']],
    );
    assert.deepEqual(
      found.stranded.map((finding) => [finding.kind, finding.subject]),
      [['stranded_sandbox', 'sb-failed']],
    );
    assert.match(found.stranded[0]?.detail ?? '', /teardown failed \(DESTROY_FAILED\).*containers c-failed are orphans/);
    assert.deepEqual(found.liveMismatches, []);
  });

  test('a DESTROY_FAILED row with nothing left is still stranded, so the sweep can close it', () => {
    const found = classifyInventory(inventory({ rows: { 'sb-failed': row('DESTROY_FAILED') } }));
    assert.deepEqual(
      found.stranded.map((finding) => finding.subject),
      ['sb-failed'],
    );
    assert.doesNotMatch(found.stranded[0]?.detail ?? '', /orphans/);
  });

  test('other end states are done: DESTROYED, DENIED, EXPIRED and FAILED rows are not stranded', () => {
    const rows = Object.fromEntries((['DESTROYED', 'DENIED', 'EXPIRED', 'FAILED'] as const).map((state) => [`sb-${state}`, row(state)]));
    assert.deepEqual(classifyInventory(inventory({ rows })), { orphans: [], stranded: [], liveMismatches: [] });
  });

  test('a running workflow protects everything of its sandbox, DESTROY_FAILED row or not', () => {
    const found = classifyInventory(inventory({ containers: [container('c-1', 'sb-1')], rows: { 'sb-1': row('DESTROY_FAILED') }, running: ['sb-1'] }));
    assert.deepEqual(found.orphans, []);
    assert.deepEqual(found.stranded, []);
    assert.deepEqual(
      found.liveMismatches.map((finding) => finding.subject),
      ['c-1'],
      'reported, never removed',
    );
  });

  test('an exited container under a READY sandbox whose workflow runs is a live mismatch, not an orphan', () => {
    const found = classifyInventory(inventory({ containers: [container('c-dead', 'sb-ready', 'exited')], rows: { 'sb-ready': row('READY') }, running: ['sb-ready'] }));
    assert.deepEqual(found.orphans, []);
    assert.deepEqual(
      found.liveMismatches.map((finding) => [finding.kind, finding.subject, finding.sandboxId]),
      [['live_mismatch', 'c-dead', 'sb-ready']],
    );
    assert.match(found.liveMismatches[0]?.detail ?? '', /container exited under a READY sandbox/);
  });

  test('an exited container next to a running one of the same READY sandbox is no mismatch (a restart left it)', () => {
    const found = classifyInventory(
      inventory({
        containers: [container('c-old', 'sb-ready', 'exited'), container('c-new', 'sb-ready')],
        rows: { 'sb-ready': row('READY') },
        running: ['sb-ready'],
      }),
    );
    assert.deepEqual(found, { orphans: [], stranded: [], liveMismatches: [] });
  });

  test('a READY container-adapter sandbox whose workflow runs but has no container is a live mismatch', () => {
    const found = classifyInventory(inventory({ rows: { 'sb-moto': row('READY', 'moto'), 'sb-floci': row('READY', 'floci') }, running: ['sb-floci', 'sb-moto'] }));
    assert.deepEqual(
      found.liveMismatches.map((finding) => [finding.kind, finding.subject, finding.sandboxId]),
      [
        ['live_mismatch', 'sb-moto', 'sb-moto'],
        ['live_mismatch', 'sb-floci', 'sb-floci'],
      ],
    );
    assert.match(found.liveMismatches[0]?.detail ?? '', /READY with no container/);
    assert.deepEqual([found.orphans, found.stranded], [[], []]);
  });

  test('no mismatch for a memory sandbox (no container), a running READY one, or one still provisioning', () => {
    const found = classifyInventory(
      inventory({
        containers: [container('c-ok', 'sb-ok')],
        rows: { 'sb-memory': row('READY', 'memory'), 'sb-ok': row('READY'), 'sb-starting': row('PROVISIONING') },
        running: ['sb-memory', 'sb-ok', 'sb-starting'],
      }),
    );
    assert.deepEqual(found, { orphans: [], stranded: [], liveMismatches: [] });
  });

  test('a READY row whose workflow has ended is stranded, not a mismatch', () => {
    const found = classifyInventory(inventory({ rows: { 'sb-gone': row('READY') } }));
    assert.deepEqual(found.liveMismatches, []);
    assert.deepEqual(
      found.stranded.map((finding) => finding.subject),
      ['sb-gone'],
    );
  });
});
