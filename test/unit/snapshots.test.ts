import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createSnapshotStoreActivities, packSnapshot, unpackSnapshot } from '../../src/activities/snapshot-activities';
import { SecretBox } from '../../src/crypto/secret-box';
import { OPERATOR_HEADER, operatorHeaders, operatorUrl } from '../../src/adapters/operator-endpoint';
import { createFlociAdapter } from '../../src/adapters/floci-adapter';
import { parseRecording, recordingHeader } from '../../src/adapters/moto-recording';
import type { ContainerBroker } from '../../src/docker';
import { isSandboxPlaneError } from '../../src/domain/errors';
import { classifyInventory } from '../../src/domain/leaks';
import { screenRequest } from '../../src/domain/screening';
import { DEFAULT_SNAPSHOT_QUOTA, snapshotMisfit } from '../../src/domain/snapshots';
import { Store } from '../../src/store';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-snapshots-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function codeOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (err) {
    return isSandboxPlaneError(err) ? err.code : String(err);
  }
  return undefined;
}

const identity = { seed: '340282366920938463463374607431768211455', user: 'sbx-a', services: ['s3', 'sqs'] };
const recorded = (url: string) => JSON.stringify({ headers: { Host: '127.0.0.1:1' }, method: 'PUT', url, body: '', body_encoded: false });

describe('snapshot content', () => {
  test('packs compressed with the digest of what it holds, and unpacks only what matches it', () => {
    const state = `${recordingHeader(identity)}${recorded('http://127.0.0.1:1/bucket')}\n`.repeat(3);
    const packed = packSnapshot(state);
    assert.match(packed.digest, /^[0-9a-f]{64}$/);
    assert.equal(unpackSnapshot(packed), state);
    const other = packSnapshot('something else');
    assert.equal(
      codeOf(() => unpackSnapshot({ ...packed, gzipBase64: other.gzipBase64 })),
      'SNAPSHOT_UNSUPPORTED',
    );
  });

  test('over the cap is SNAPSHOT_TOO_LARGE, measured compressed', () => {
    const random = Array.from({ length: 4096 }, (_, i) => ((i * 2654435761) >>> 0).toString(36)).join('');
    assert.equal(
      codeOf(() => packSnapshot(random, 1000)),
      'SNAPSHOT_TOO_LARGE',
    );
    assert.doesNotThrow(() => packSnapshot('a'.repeat(100_000), 1000), 'what compresses below the cap is kept');
  });
});

describe('moto recordings', () => {
  test('a recording is our header line, then moto’s requests', () => {
    const recording = parseRecording(`${recordingHeader(identity)}${recorded('http://127.0.0.1:1/bucket')}\n\n`);
    assert.deepEqual(recording.identity, identity);
    assert.equal(recording.steps.length, 1);
    const [step] = recording.steps;
    assert.ok(step !== undefined && 'request' in step);
    assert.equal(step.request.method, 'PUT');
  });

  test('anything else is refused, naming the line', () => {
    for (const [text, problem] of [
      ['', /empty/],
      [`${recorded('http://127.0.0.1:1/b')}\n`, /first line/],
      [`${recordingHeader(identity)}not json\n`, /line 2/],
      [`${recordingHeader(identity)}${JSON.stringify({ method: 'get', url: 'x', headers: {} })}\n`, /line 2/],
      [`${JSON.stringify({ sandboxplane: { ...identity, format: 2 } })}\n`, /first line/],
    ] as const) {
      assert.throws(
        () => parseRecording(text),
        (err: unknown) => isSandboxPlaneError(err) && err.code === 'SNAPSHOT_UNSUPPORTED' && problem.test(err.message),
        text,
      );
    }
  });
});

describe('where a snapshot may go', () => {
  const source = { snapshotId: 'snap-0123456789abcdef', adapter: 'moto' as const, services: ['s3', 'sqs'] };

  test('only into a sandbox of its adapter that is granted every service it holds', () => {
    assert.equal(snapshotMisfit(source, { adapter: 'moto', services: ['dynamodb', 's3', 'sqs'] }), undefined);
    assert.equal(snapshotMisfit(source, { adapter: 'floci', services: ['s3', 'sqs'] })?.code, 'INVALID_INPUT');
    const missing = snapshotMisfit(source, { adapter: 'moto', services: ['s3'] });
    assert.equal(missing?.code, 'SERVICE_NOT_ALLOWED');
    assert.match(missing?.message ?? '', /sqs/);
  });

  test("screening a fork: no snapshot of the principal's is NOT_FOUND, a misfit is refused, a fit goes on to policy", () => {
    const base = {
      flags: { CLOUD_SANDBOX: true, IAC_LOCAL: true, STAGING_APPLY: false, PRODUCTION_APPLY: false, ADAPTER_MEMORY: true, ADAPTER_MOTO: true, ADAPTER_FLOCI: true },
      policies: [{ id: 1, principalPattern: 'agent-*', capability: 'cloud.sandbox' as const, effect: 'allow' as const, maxTtlSeconds: null, services: null, maxConcurrent: null }],
      liveSandboxes: 0,
      availableAdapters: ['moto' as const],
      ttl: { defaultTtlSeconds: 600, ttlCeilingSeconds: 3600, maxLifetimeSeconds: 86_400 },
    };
    const request = {
      id: 'sbx-f',
      principal: 'agent-1',
      capability: 'cloud.sandbox' as const,
      adapter: 'moto' as const,
      services: ['s3', 'sqs'],
      labels: {},
      fromSnapshot: source.snapshotId,
    };
    assert.equal(screenRequest({ ...base, request }).code, 'NOT_FOUND');
    assert.equal(screenRequest({ ...base, request: { ...request, services: ['s3'] }, source }).code, 'SERVICE_NOT_ALLOWED');
    assert.equal(screenRequest({ ...base, request, source }).effect, 'allow');
  });
});

describe('the snapshot store', () => {
  const store = Store.open(path.join(dir, 'plane.sqlite'));
  after(() => store.close());
  const packed = packSnapshot('state of sbx-a');
  // The store role seals content with its key (snapshot-activities.ts); the repository keeps what it is given.
  const content = { digest: packed.digest, bytes: packed.bytes, sealed: `sealed:${packed.gzipBase64}` };
  const kept = { snapshotId: 'snap-aaaaaaaaaaaaaaaa', sandboxId: 'sbx-a', principal: 'agent-1', adapter: 'moto' as const, services: ['s3'], createdAt: '2026-12-05T10:00:00.000Z', content };

  test('keeps a snapshot once per id and its content once per digest', () => {
    const first = store.snapshots.keep(kept, DEFAULT_SNAPSHOT_QUOTA);
    assert.deepEqual(store.snapshots.keep(kept, DEFAULT_SNAPSHOT_QUOTA), first, 'a retried keep returns the first');
    store.snapshots.keep({ ...kept, snapshotId: 'snap-bbbbbbbbbbbbbbbb', createdAt: '2026-12-05T11:00:00.000Z' }, DEFAULT_SNAPSHOT_QUOTA);
    assert.equal((store.db.prepare('SELECT count(*) AS n FROM snapshot_contents').get() as { n: number }).n, 1);
    assert.equal(first.bytes, content.bytes);
    assert.deepEqual(
      store.snapshots.list('agent-1').map((s) => s.snapshotId),
      ['snap-bbbbbbbbbbbbbbbb', 'snap-aaaaaaaaaaaaaaaa'],
      'newest first',
    );
  });

  test("another principal's snapshot is not found: not listed, not loaded, not found", () => {
    assert.deepEqual(store.snapshots.list('agent-2'), []);
    assert.equal(store.snapshots.find('snap-aaaaaaaaaaaaaaaa', 'agent-2'), undefined);
    assert.equal(
      codeOf(() => store.snapshots.load('snap-aaaaaaaaaaaaaaaa', 'agent-2')),
      'NOT_FOUND',
    );
    const loaded = store.snapshots.load('snap-aaaaaaaaaaaaaaaa', 'agent-1');
    assert.deepEqual(loaded.content, content);
    assert.equal(store.snapshots.list(undefined).length, 2, "an operator's listing has everyone's");
  });

  test("a PAUSED sandbox runs on no host: its row's place is freed", () => {
    store.hosts.register({ hostId: 'h1', taskQueue: 'tq-docker-h1', adapters: ['moto'], capacity: 1, engineId: null, identity: 'w' });
    const row = projectionSnapshot({ id: 'sbx-p', adapter: 'moto', state: 'READY' });
    store.sandboxes.record(row, { step: 1, action: 'screened', actor: 'policy', effect: 'allow', reason: null, summary: {} });
    assert.ok('placement' in store.hosts.place({ sandboxId: 'sbx-p', adapter: 'moto', liveHostIds: new Set(['h1']) }));
    assert.equal(store.hosts.list()[0]?.liveSandboxes, 1);
    store.sandboxes.record({ ...row, state: 'PAUSED' }, { step: 2, action: 'paused', actor: 'api', effect: 'paused', reason: null, summary: {} });
    assert.equal(store.hosts.list()[0]?.liveSandboxes, 0);
    assert.equal(store.hosts.placementOf('sbx-p'), undefined, 'a resume is placed anew');
  });
});

describe('snapshots at rest', () => {
  test("the store role seals a snapshot's content with its key, bound to the digest, and opens it for its principal only", async () => {
    const store = Store.open(path.join(dir, 'sealed.sqlite'));
    try {
      const activities = createSnapshotStoreActivities({ store, secrets: SecretBox.fromKeyFile(path.join(dir, 'store.key')) });
      const state = `${recordingHeader(identity)}${recorded('http://127.0.0.1:1/bucket')}\n`;
      const content = packSnapshot(state);
      await activities.keepSnapshot({
        snapshotId: 'snap-cccccccccccccccc',
        sandboxId: 'sbx-a',
        principal: 'agent-1',
        adapter: 'moto',
        services: ['s3'],
        createdAt: '2026-12-05T10:00:00.000Z',
        content,
      });
      const { sealed } = store.db.prepare('SELECT sealed FROM snapshot_contents').get() as { sealed: string };
      assert.ok(!sealed.includes(content.gzipBase64), 'the content is not kept in clear');
      const loaded = await activities.loadSnapshot({ snapshotId: 'snap-cccccccccccccccc', principal: 'agent-1' });
      assert.equal(unpackSnapshot(loaded.content), state);
      await assert.rejects(activities.loadSnapshot({ snapshotId: 'snap-cccccccccccccccc', principal: 'agent-2' }), (err: Error & { type?: string }) => err.type === 'NOT_FOUND');
      // The seal is bound to the digest: one snapshot's sealed content passed off as another's does not open.
      await activities.keepSnapshot({
        snapshotId: 'snap-dddddddddddddddd',
        sandboxId: 'sbx-a',
        principal: 'agent-1',
        adapter: 'moto',
        services: ['s3'],
        createdAt: '2026-12-05T11:00:00.000Z',
        content: packSnapshot('another state'),
      });
      store.db.prepare('UPDATE snapshot_contents SET sealed = ? WHERE digest = ?').run(sealed, packSnapshot('another state').digest);
      await assert.rejects(activities.loadSnapshot({ snapshotId: 'snap-dddddddddddddddd', principal: 'agent-1' }));
    } finally {
      store.close();
    }
  });
});

describe('snapshot quotas and deletes in the store', () => {
  const source = (snapshotId: string, principal: string, state: string) => ({
    snapshotId,
    sandboxId: 'sbx-q',
    principal,
    adapter: 'moto' as const,
    services: ['s3'],
    createdAt: '2026-12-05T10:00:00.000Z',
    content: packSnapshot(state),
  });

  test('the byte quota counts what is kept, per principal; content shared by two snapshots goes with the last of them', async () => {
    const store = Store.open(path.join(dir, 'quota.sqlite'));
    try {
      const state = 'x'.repeat(4000);
      const bytes = packSnapshot(state).bytes;
      const activities = createSnapshotStoreActivities({
        store,
        secrets: SecretBox.fromKeyFile(path.join(dir, 'store.key')),
        snapshotQuota: { count: 10, bytes: 2 * bytes, maxAgeSeconds: 86400 },
      });
      await activities.keepSnapshot(source('snap-1000000000000001', 'agent-1', state));
      await activities.keepSnapshot(source('snap-1000000000000002', 'agent-1', state));
      await assert.rejects(activities.keepSnapshot(source('snap-1000000000000003', 'agent-1', state)), (err: Error & { type?: string }) => err.type === 'QUOTA_EXCEEDED');
      await activities.keepSnapshot(source('snap-1000000000000001', 'agent-1', state)); // a retried keep of a kept one is no new snapshot
      await activities.keepSnapshot(source('snap-2000000000000001', 'agent-2', state)); // another principal's quota is its own
      assert.deepEqual(store.snapshots.holdings('agent-1'), { count: 2, bytes: 2 * bytes });

      store.snapshots.remove('snap-1000000000000001', 'agent-1');
      assert.equal((store.db.prepare('SELECT COUNT(*) AS n FROM snapshot_contents').get() as { n: number }).n, 1, 'still held by two others');
      assert.throws(
        () => store.snapshots.remove('snap-2000000000000001', 'agent-1'),
        (err: Error & { code?: string }) => err.code === 'NOT_FOUND',
      );
      store.snapshots.remove('snap-1000000000000002', undefined);
      store.snapshots.remove('snap-2000000000000001', 'agent-2');
      assert.equal((store.db.prepare('SELECT COUNT(*) AS n FROM snapshot_contents').get() as { n: number }).n, 0, 'no content is left behind');
    } finally {
      store.close();
    }
  });
});

describe('the sweep and paused sandboxes', () => {
  test('a PAUSED sandbox without a container is what it should be: no mismatch, no leak', () => {
    const found = classifyInventory({ containers: [], rows: { 'sbx-p': { state: 'PAUSED', adapter: 'moto' } }, running: ['sbx-p'] });
    assert.deepEqual(found, { orphans: [], stranded: [], liveMismatches: [] });
  });
});

describe('operator tokens in text', () => {
  test("a call to an emulator's own API names a URL without the token, which goes in a header", () => {
    const token = '0123456789abcdef0123456789abcdef0123456789abcdef';
    const access = { endpoint: 'http://127.0.0.1:32801', token };
    assert.equal(operatorUrl(access, '/moto-api/reset'), 'http://127.0.0.1:32801/_sandboxplane/moto-api/reset');
    assert.deepEqual(operatorHeaders(access), { [OPERATOR_HEADER]: token });
    assert.equal(operatorUrl({ endpoint: 'http://127.0.0.1:32801' }, '/_floci/health'), 'http://127.0.0.1:32801/_floci/health', 'an emulator without a guard');
    assert.deepEqual(operatorHeaders({ endpoint: 'http://127.0.0.1:32801' }), {});
  });
});

describe('Floci', () => {
  test('says why it cannot be snapshotted: SNAPSHOT_UNSUPPORTED, before touching the engine', async () => {
    const untouched = new Proxy({}, { get: () => () => assert.fail('the engine was asked') }) as ContainerBroker;
    const floci = createFlociAdapter({ broker: untouched, image: 'sha256:floci', healthTimeoutMs: 1000 });
    await assert.rejects(floci.captureState('sbx-f'), (err: unknown) => isSandboxPlaneError(err) && err.code === 'SNAPSHOT_UNSUPPORTED' && /Floci/.test(err.message));
  });
});
