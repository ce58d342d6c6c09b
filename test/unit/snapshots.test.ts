import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSnapshotStoreActivities, deleteSnapshot, moveSnapshotContentsOut, packSnapshot, unpackSnapshot } from '../../src/activities/snapshot-activities';
import { SnapshotContents } from '../../src/activities/snapshot-contents';
import { SnapshotSeal } from '../../src/crypto/snapshot-seal';
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
    assert.match(packed.content.digest, /^[0-9a-f]{64}$/);
    assert.equal(packed.content.bytes, packed.gzip.length);
    assert.equal(unpackSnapshot(packed.content.digest, packed.gzip), state);
    assert.equal(
      codeOf(() => unpackSnapshot(packed.content.digest, packSnapshot('something else').gzip)),
      'SNAPSHOT_CORRUPT',
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
  const { content } = packSnapshot('state of sbx-a');
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

const seal = new SnapshotSeal([{ id: 'k1', key: randomBytes(32) }]);
const contentsIn = (name: string) => new SnapshotContents(path.join(dir, name), seal);

describe('snapshots at rest', () => {
  test('content is kept out of the SQLite file, sealed with a key derived from the codec key, bound to its digest', async () => {
    const contents = contentsIn('at-rest');
    const state = `${recordingHeader(identity)}${recorded('http://127.0.0.1:1/bucket')}\n`;
    const { content, gzip } = packSnapshot(state);
    await contents.put(content.digest, gzip);
    const file = path.join(contents.dir, content.digest.slice(0, 2), `${content.digest}.sealed`);
    assert.ok(!fs.readFileSync(file).includes(gzip), 'the content is not kept in clear');
    assert.equal(unpackSnapshot(content.digest, await contents.get(content.digest)), state);

    // One digest's sealed content passed off as another's does not open.
    const other = packSnapshot('another state');
    fs.mkdirSync(path.join(contents.dir, other.content.digest.slice(0, 2)), { recursive: true });
    fs.copyFileSync(file, path.join(contents.dir, other.content.digest.slice(0, 2), `${other.content.digest}.sealed`));
    await assert.rejects(contents.get(other.content.digest), (err: unknown) => isSandboxPlaneError(err) && err.code === 'SNAPSHOT_CORRUPT');

    // Another plane's keys open nothing here; what it kept under the same digest is replaced by ours.
    const theirs = new SnapshotContents(contents.dir, new SnapshotSeal([{ id: 'k9', key: randomBytes(32) }]));
    await assert.rejects(theirs.get(content.digest), (err: unknown) => isSandboxPlaneError(err) && /key k1/.test(err.message));
    await theirs.put(content.digest, gzip);
    assert.equal(unpackSnapshot(content.digest, await theirs.get(content.digest)), state);

    await assert.rejects(contents.get('../'.repeat(3)), (err: unknown) => isSandboxPlaneError(err) && err.code === 'INVALID_INPUT');
  });

  test('the store keeps a snapshot only over content that is there, and hands it to its principal only', async () => {
    const store = Store.open(path.join(dir, 'sealed.sqlite'));
    try {
      const contents = contentsIn('store-keeps');
      const activities = createSnapshotStoreActivities({ store, contents });
      const { content, gzip } = packSnapshot('state of sbx-a');
      const snapshot = {
        snapshotId: 'snap-cccccccccccccccc',
        sandboxId: 'sbx-a',
        principal: 'agent-1',
        adapter: 'moto' as const,
        services: ['s3'],
        createdAt: '2026-12-05T10:00:00.000Z',
        content,
      };
      await assert.rejects(activities.keepSnapshot(snapshot), (err: Error & { type?: string }) => err.type === 'SNAPSHOT_CORRUPT', 'a capture the store cannot see');
      assert.deepEqual(store.snapshots.list(undefined), [], 'nothing kept');
      await contents.put(content.digest, gzip);
      await activities.keepSnapshot(snapshot);
      assert.deepEqual((store.db.prepare('SELECT sealed FROM snapshot_contents').get() as { sealed: string }).sealed, '', 'no content in the SQLite file');
      const loaded = await activities.loadSnapshot({ snapshotId: 'snap-cccccccccccccccc', principal: 'agent-1' });
      assert.deepEqual(loaded.content, content, 'a digest, not the content, crosses workflow history');
      await assert.rejects(activities.loadSnapshot({ snapshotId: 'snap-cccccccccccccccc', principal: 'agent-2' }), (err: Error & { type?: string }) => err.type === 'NOT_FOUND');
    } finally {
      store.close();
    }
  });

  test('a run of an earlier build, which carries the content in its history, keeps it across the upgrade (checked against its digest)', async () => {
    const store = Store.open(path.join(dir, 'legacy.sqlite'));
    try {
      const contents = contentsIn('legacy');
      const activities = createSnapshotStoreActivities({ store, contents });
      const { content, gzip } = packSnapshot('captured by a docker worker of the last build');
      const snapshot = { snapshotId: 'snap-eeeeeeeeeeeeeeee', sandboxId: 'sbx-a', principal: 'agent-1', adapter: 'moto' as const, services: ['s3'], createdAt: '2026-12-05T10:00:00.000Z' };
      const forged = packSnapshot('something else').gzip.toString('base64');
      await assert.rejects(activities.keepSnapshot({ ...snapshot, content: { ...content, gzipBase64: forged } }), (err: Error & { type?: string }) => err.type === 'SNAPSHOT_CORRUPT');
      await activities.keepSnapshot({ ...snapshot, content: { ...content, gzipBase64: gzip.toString('base64') } });
      assert.equal(unpackSnapshot(content.digest, await contents.get(content.digest)), 'captured by a docker worker of the last build');
    } finally {
      store.close();
    }
  });

  test('content an older build kept in the SQLite file moves out, once, when the store role starts', async () => {
    const store = Store.open(path.join(dir, 'moved.sqlite'));
    try {
      const secrets = SecretBox.fromKeyFile(path.join(dir, 'store.key'));
      const { content, gzip } = packSnapshot('kept by the last build');
      store.db.prepare('INSERT INTO snapshot_contents (digest, sealed, bytes) VALUES (?, ?, ?)').run(content.digest, secrets.seal(gzip, `snapshot:${content.digest}`), content.bytes);
      const contents = contentsIn('moved');
      assert.equal(await moveSnapshotContentsOut(store, secrets, contents), 1);
      assert.equal(unpackSnapshot(content.digest, await contents.get(content.digest)), 'kept by the last build');
      assert.equal(await moveSnapshotContentsOut(store, secrets, contents), 0, 'moved once');
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
    content: packSnapshot(state).content,
  });

  test('the byte quota counts what is kept, per principal; content shared by two snapshots goes with the last of them', async () => {
    const store = Store.open(path.join(dir, 'quota.sqlite'));
    try {
      const state = 'x'.repeat(4000);
      const { content, gzip } = packSnapshot(state);
      const contents = contentsIn('quota');
      await contents.put(content.digest, gzip);
      const activities = createSnapshotStoreActivities({ store, contents, snapshotQuota: { count: 10, bytes: 2 * content.bytes, maxAgeSeconds: 86400 } });
      await activities.keepSnapshot(source('snap-1000000000000001', 'agent-1', state));
      await activities.keepSnapshot(source('snap-1000000000000002', 'agent-1', state));
      await assert.rejects(activities.keepSnapshot(source('snap-1000000000000003', 'agent-1', state)), (err: Error & { type?: string }) => err.type === 'QUOTA_EXCEEDED');
      await activities.keepSnapshot(source('snap-1000000000000001', 'agent-1', state)); // a retried keep of a kept one is no new snapshot
      await activities.keepSnapshot(source('snap-2000000000000001', 'agent-2', state)); // another principal's quota is its own
      assert.deepEqual(store.snapshots.holdings('agent-1'), { count: 2, bytes: 2 * content.bytes });

      store.sandboxes.record(projectionSnapshot({ id: 'sbx-q', adapter: 'moto', state: 'DESTROYED' }), {
        step: 1,
        action: 'screened',
        actor: 'policy',
        effect: 'allow',
        reason: null,
        summary: {},
      });
      const remove = (snapshotId: string, principal: string | undefined) => deleteSnapshot(store, { snapshotId, principal, actor: 'test', reason: 'test' });
      remove('snap-1000000000000001', 'agent-1');
      assert.equal((store.db.prepare('SELECT COUNT(*) AS n FROM snapshot_contents').get() as { n: number }).n, 1, 'still held by two others');
      assert.throws(
        () => remove('snap-2000000000000001', 'agent-1'),
        (err: Error & { code?: string }) => err.code === 'NOT_FOUND',
      );
      remove('snap-1000000000000002', undefined);
      remove('snap-2000000000000001', 'agent-2');
      assert.equal((store.db.prepare('SELECT COUNT(*) AS n FROM snapshot_contents').get() as { n: number }).n, 0, 'no content row is left behind');
      assert.ok(await contents.get(content.digest), 'its file stays for the sweep: a fork that loaded the snapshot a moment ago still restores');
    } finally {
      store.close();
    }
  });

  test('the sweep removes content no snapshot holds once it has lain a day (a refused keep, a deleted snapshot), and writes a crash cut short; no other', async () => {
    const store = Store.open(path.join(dir, 'unheld.sqlite'));
    try {
      const contents = contentsIn('unheld');
      const activities = createSnapshotStoreActivities({ store, contents });
      const held = packSnapshot('held');
      const refused = packSnapshot('refused an hour ago');
      const fresh = packSnapshot('captured a moment ago');
      for (const { content, gzip } of [held, refused, fresh]) await contents.put(content.digest, gzip);
      await activities.keepSnapshot({ ...source('snap-3000000000000001', 'agent-1', 'held'), createdAt: new Date().toISOString() });
      const aDayAgo = new Date(Date.now() - 25 * 60 * 60 * 1000);
      for (const { content } of [held, refused]) fs.utimesSync(path.join(contents.dir, content.digest.slice(0, 2), `${content.digest}.sealed`), aDayAgo, aDayAgo);
      const cutShort = path.join(contents.dir, held.content.digest.slice(0, 2), `${held.content.digest}.sealed.1234.abcdef.part`);
      fs.writeFileSync(cutShort, 'half a file');
      fs.utimesSync(cutShort, aDayAgo, aDayAgo);
      await new MockActivityEnvironment().run(() => activities.expireSnapshots());
      assert.deepEqual((await contents.list()).map(({ digest }) => digest).sort(), [held.content.digest, fresh.content.digest].sort());
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
