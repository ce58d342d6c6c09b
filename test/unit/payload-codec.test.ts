import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  AesGcmPayloadCodec,
  CodecKeysMissingError,
  codecKeysFor,
  ENCRYPTED_ENCODING,
  ensureCodecKeysFile,
  formatCodecKey,
  generateCodecKey,
  KEY_ID_METADATA,
  parseCodecKeys,
  readCodecKeysFile,
} from '../../src/codec';
import { ensureCodecKeys } from '../../src/codec/codec-settings';
import { ConfigError, loadConfig } from '../../src/config/config';
import { rejectsWith } from '../helpers/rejects-with';

const text = (bytes: Uint8Array | null | undefined) => new TextDecoder().decode(bytes ?? new Uint8Array());
const payloadOf = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const valueOf = (payload: Payload): unknown => defaultPayloadConverter.fromPayload(payload);
const keyLine = (id: string) => formatCodecKey({ ...generateCodecKey(), id });

describe('AesGcmPayloadCodec', () => {
  const request = { principal: 'agent-7', purpose: 'load test the billing queue', services: ['s3'] };

  test('round trip: the wire holds no clear text, the key id is in the metadata, decoding gives the payload back', async () => {
    const key = generateCodecKey();
    const codec = new AesGcmPayloadCodec([key]);
    const [encoded] = await codec.encode([payloadOf(request)]);
    assert.ok(encoded);
    assert.equal(text(encoded.metadata?.encoding), ENCRYPTED_ENCODING);
    assert.equal(text(encoded.metadata?.[KEY_ID_METADATA]), key.id);
    assert.doesNotMatch(Buffer.from(encoded.data ?? []).toString('latin1'), /billing|agent-7|json\/plain/);
    const [decoded] = await codec.decode([encoded]);
    assert.ok(decoded);
    assert.deepEqual(valueOf(decoded), request);
    assert.equal(text(decoded.metadata?.encoding), 'json/plain', 'the original metadata comes back too');
  });

  test('two encodings of one payload differ (a fresh IV each time)', async () => {
    const codec = new AesGcmPayloadCodec([generateCodecKey()]);
    const [first, second] = await codec.encode([payloadOf(request), payloadOf(request)]);
    assert.notDeepEqual(first?.data, second?.data);
  });

  test('key rotation: the new current key encrypts, a payload under the old key id still decodes', async () => {
    const old = generateCodecKey();
    const current = generateCodecKey();
    const [underOld] = await new AesGcmPayloadCodec([old]).encode([payloadOf('before rotation')]);
    assert.ok(underOld);
    const rotated = new AesGcmPayloadCodec([current, old]);
    assert.equal(rotated.currentKeyId, current.id);
    const [underNew] = await rotated.encode([payloadOf('after rotation')]);
    assert.equal(text(underNew?.metadata?.[KEY_ID_METADATA]), current.id);
    assert.deepEqual((await rotated.decode([underOld, underNew!])).map(valueOf), ['before rotation', 'after rotation']);
  });

  test('an unknown key id is a clear error naming it and the known ones', async () => {
    const gone = generateCodecKey();
    const kept = generateCodecKey();
    const [encoded] = await new AesGcmPayloadCodec([gone]).encode([payloadOf('x')]);
    await assert.rejects(
      new AesGcmPayloadCodec([kept]).decode([encoded!]),
      rejectsWith('PAYLOAD_UNDECRYPTABLE', new RegExp(`key id ${gone.id}, which is not among this process's keys \\(${kept.id}\\)`)),
    );
  });

  test('tampered ciphertext, a swapped key id and a truncated payload are refused', async () => {
    const a = generateCodecKey();
    const b = { ...generateCodecKey(), key: a.key };
    const codec = new AesGcmPayloadCodec([a, b]);
    const [encoded] = await codec.encode([payloadOf(request)]);
    const data = Uint8Array.from(encoded!.data!);
    data[20] = (data[20] ?? 0) ^ 1;
    await assert.rejects(codec.decode([{ ...encoded, data }]), rejectsWith('PAYLOAD_UNDECRYPTABLE', /failed authentication/));
    // Same key bytes under another id: the id is authenticated with the ciphertext.
    const relabelled = { ...encoded, metadata: { ...encoded!.metadata, [KEY_ID_METADATA]: new TextEncoder().encode(b.id) } };
    await assert.rejects(codec.decode([relabelled]), rejectsWith('PAYLOAD_UNDECRYPTABLE', /failed authentication/));
    await assert.rejects(codec.decode([{ ...encoded, data: data.subarray(0, 10) }]), rejectsWith('PAYLOAD_UNDECRYPTABLE', /truncated/));
  });

  test('payloads without the encoding marker pass through unchanged (histories from before the codec)', async () => {
    const codec = new AesGcmPayloadCodec([generateCodecKey()]);
    const clear = [payloadOf(request), payloadOf(null), payloadOf(new Uint8Array([1, 2, 3]))];
    assert.deepEqual(await codec.decode(clear), clear);
  });
});

describe('codec keys', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-codec-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('a keys file: comments and blank lines skipped, the first key is current', () => {
    const file = path.join(dir, 'keys');
    fs.writeFileSync(file, `# rotated 2026-12-01\n${keyLine('new')}\n\n${keyLine('old')}\n`);
    const keys = readCodecKeysFile(file);
    assert.deepEqual(
      keys.map((key) => key.id),
      ['new', 'old'],
    );
    assert.equal(new AesGcmPayloadCodec(keys).currentKeyId, 'new');
  });

  test('malformed keys name what to fix and never echo the key', () => {
    const short = `k1:${Buffer.alloc(16, 7).toString('base64')}`;
    assert.throws(() => parseCodecKeys(short, 'F'), /F entry 1 \(key id k1\): the key must be 32 bytes \(AES-256\), got 16/);
    assert.throws(() => parseCodecKeys('nocolon', 'F'), /F entry 1 is not keyId:base64key/);
    assert.throws(() => parseCodecKeys('k1:not base64!', 'F'), /the key is not base64/);
    assert.throws(() => parseCodecKeys(`${keyLine('a')},${keyLine('a')}`, 'F'), /names key id a twice/);
    assert.throws(() => parseCodecKeys('# nothing\n', 'F'), /F holds no key/);
    assert.throws(
      () => parseCodecKeys(short, 'F'),
      (err: Error) => !err.message.includes(short.slice(3)),
    );
  });

  test('the default file is made once, with one key, readable by its owner only; a second call reads the same key', () => {
    const file = path.join(dir, 'nested', 'codec-keys');
    const first = ensureCodecKeysFile(file);
    const second = ensureCodecKeysFile(file);
    assert.equal(first.created, true);
    assert.equal(second.created, false);
    assert.equal(first.keys.length, 1);
    assert.deepEqual(second.keys, first.keys);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['codec-keys'], 'nothing left aside');
  });

  test("a client never makes the default file: a missing one is CodecKeysMissingError saying how to make it; the plane's start makes it", () => {
    const settings = { keys: undefined, keysFile: path.join(dir, 'unmade', 'codec-keys') };
    assert.throws(
      () => codecKeysFor(settings),
      (err: unknown) => err instanceof CodecKeysMissingError && err.code === 'CONFIG_INVALID' && err.keysFile === settings.keysFile && /npm start/.test(err.hint),
    );
    assert.equal(fs.existsSync(path.dirname(settings.keysFile)), false, 'nothing was made');
    const made = ensureCodecKeys(settings);
    assert.equal(made.keys?.length, 1);
    assert.deepEqual(codecKeysFor(settings), made.keys, 'a client then reads the key the start made');
  });

  test('configuration: SANDBOXPLANE_CODEC_KEYS or _KEYS_FILE; a bad one is one CONFIG error naming the variable', () => {
    assert.deepEqual(
      loadConfig({ SANDBOXPLANE_CODEC_KEYS: `${keyLine('a')},${keyLine('b')}` }).codec.keys?.map((key) => key.id),
      ['a', 'b'],
    );
    const file = path.join(dir, 'configured');
    fs.writeFileSync(file, `${keyLine('f1')}\n`);
    const fromFile = loadConfig({ SANDBOXPLANE_CODEC_KEYS_FILE: file }).codec;
    assert.equal(fromFile.keysFile, file);
    assert.deepEqual(
      fromFile.keys?.map((key) => key.id),
      ['f1'],
    );

    const issues = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.code, 'CONFIG_INVALID');
        return err.issues.map((issue) => `${issue.key}: ${issue.message}`);
      }
      return assert.fail('expected a ConfigError');
    };
    assert.match(issues({ SANDBOXPLANE_CODEC_KEYS_FILE: path.join(dir, 'missing') })[0]!, /^SANDBOXPLANE_CODEC_KEYS_FILE: cannot read the codec keys file .*missing: ENOENT/);
    assert.match(issues({ SANDBOXPLANE_CODEC_KEYS: 'k1:abc' })[0]!, /^SANDBOXPLANE_CODEC_KEYS: entry 1 \(key id k1\): the key must be 32 bytes/);
    assert.match(issues({ SANDBOXPLANE_CODEC_KEYS: keyLine('a'), SANDBOXPLANE_CODEC_KEYS_FILE: file })[0]!, /set either SANDBOXPLANE_CODEC_KEYS or SANDBOXPLANE_CODEC_KEYS_FILE, not both/);
    // With other bad keys, all are reported at once.
    assert.deepEqual(
      issues({ SANDBOXPLANE_CODEC_KEYS_FILE: path.join(dir, 'missing'), TEMPORAL_ADDRESS: 'nope' }).map((line) => line.split(':')[0]),
      ['TEMPORAL_ADDRESS'],
      'a schema error stops before the keys file is read',
    );
  });
});
