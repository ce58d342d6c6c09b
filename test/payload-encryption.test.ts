/**
 * Payload encryption on a real dev server: what Temporal stores of a READY sandbox is
 * ciphertext (read raw with `temporal workflow show`), while the plane's own clients,
 * and the Temporal CLI through `sandboxctl codec-server`, read it in clear.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { startCodecServer, type CodecServer } from '../src/codec/codec-server';
import { payloadCodecFor } from '../src/codec/codec-settings';
import { locateTemporalCli } from '../src/temporal-dev/temporal-cli';
import { enrolApprover } from './helpers/approvers';
import { runCli } from './harness/cli';
import { testTemporalAddress } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const run = promisify(execFile);

/** Every string of a JSON document, and what it says when read as base64 (payload bytes are base64 in it). */
function readableTexts(value: unknown): string[] {
  if (typeof value === 'string') return [value, Buffer.from(value, 'base64').toString('latin1')];
  if (Array.isArray(value)) return value.flatMap(readableTexts);
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, inner]) => [key, ...readableTexts(inner)]);
  return [];
}

describe('payload encryption: histories hold ciphertext, clients read clear text', () => {
  let worker: TestWorker;
  let codecServer: CodecServer;
  const id = `codec-${randomUUID().slice(0, 8)}`;
  const purpose = `purpose-${randomUUID()}`;
  const reason = `reason-${randomUUID()}`;
  /** The approval code alice typed: DESIGN §12 keeps it out of history in clear too. */
  let code = '';

  const show = async (extra: readonly string[] = []) => {
    const { stdout } = await run(locateTemporalCli(process.env.SANDBOXPLANE_TEMPORAL_CLI), [
      'workflow',
      'show',
      '--workflow-id',
      `sandbox-${id}`,
      '--address',
      worker.config.temporalAddress,
      '--output',
      'json',
      ...extra,
    ]);
    return { text: stdout, json: JSON.parse(stdout) as unknown };
  };

  before(async () => {
    worker = await startTestWorker(await testTemporalAddress());
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    const alice = await enrolApprover(worker, 'alice');
    const request = { id, principal: 'agent-codec', services: ['s3'], purpose };
    assert.equal((await worker.sandboxes.create(request)).state, 'AWAITING_APPROVAL');
    code = await alice.code();
    assert.equal((await worker.sandboxes.approve(id, { approver: 'alice', reason, code })).attempt.verdict, 'accepted');
    assert.equal((await worker.sandboxes.create(request, { wait: 'ready' })).state, 'READY');
    codecServer = await startCodecServer({ codec: payloadCodecFor(worker.config.codec), port: 0, origins: [] });
  });
  after(async () => {
    await codecServer?.close();
    await worker?.stop();
  });

  test('the raw history (temporal workflow show) holds neither the purpose, the approval reason nor the approval code, only encrypted payloads', async () => {
    const { text, json } = await show();
    const texts = readableTexts(json);
    assert.ok(
      texts.some((line) => line === 'binary/encrypted'),
      'payloads carry the encoding marker',
    );
    assert.ok(texts.includes(payloadCodecFor(worker.config.codec).currentKeyId), 'and the key id');
    for (const secret of [purpose, reason, `"${code}"`]) {
      assert.equal(text.includes(secret), false, `${secret} in the raw output`);
      assert.equal(
        texts.some((line) => line.includes(secret)),
        false,
        `${secret} in a base64 field of the raw history`,
      );
    }
    // Search attributes stay clear: the UI's filters work without the codec.
    assert.ok(
      texts.some((line) => line.includes('READY')),
      'SandboxState is readable',
    );
  });

  test('through the codec server, the Temporal CLI reads the same history in clear', async () => {
    const { json } = await show(['--codec-endpoint', codecServer.url]);
    const texts = readableTexts(json);
    for (const secret of [purpose, reason])
      assert.ok(
        texts.some((line) => line.includes(secret)),
        `${secret} decoded`,
      );
  });

  test('sandboxctl status (a client with the keys) shows the purpose and the approval reason', async () => {
    const result = await runCli(['status', id], worker.env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`purpose\\s+${purpose}`));
    assert.match(result.stdout, new RegExp(`approved by\\s+alice \\(${reason}\\)`));
  });
});
