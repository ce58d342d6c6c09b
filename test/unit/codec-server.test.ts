import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, generateCodecKey } from '../../src/codec';
import { devUiOrigins, startCodecServer, type CodecServer } from '../../src/codec/codec-server';

interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}

const unb64 = (text: string) => Buffer.from(text, 'base64').toString('utf8');
/** A payload as the Temporal UI sends one to /encode: proto3 JSON, bytes as base64. */
const jsonPayload = (value: unknown): JsonPayload => {
  const payload = defaultPayloadConverter.toPayload(value);
  return {
    metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, bytes]) => [key, Buffer.from(bytes!).toString('base64')])),
    data: Buffer.from(payload.data!).toString('base64'),
  };
};

describe('sandboxctl codec-server (the codec server HTTP API)', () => {
  const key = generateCodecKey();
  const ui = 'http://127.0.0.1:8233';
  let server: CodecServer;

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } });

  before(async () => {
    server = await startCodecServer({ codec: new AesGcmPayloadCodec([key]), port: 0, origins: devUiOrigins(8233) });
  });
  after(() => server.close());

  test('listens on 127.0.0.1 only', () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  test('encode then decode gives the payloads back; the encoded ones are encrypted with the current key', async () => {
    const approval = { approver: 'alice', reason: 'looked at the capability line' };
    const encoded = await post('/encode', JSON.stringify({ payloads: [jsonPayload(approval), jsonPayload('second')] }), { Origin: ui, 'X-Namespace': 'default' });
    assert.equal(encoded.status, 200);
    assert.equal(encoded.headers.get('access-control-allow-origin'), ui);
    const { payloads } = (await encoded.json()) as { payloads: JsonPayload[] };
    assert.equal(payloads.length, 2);
    assert.equal(unb64(payloads[0]!.metadata.encoding!), 'binary/encrypted');
    assert.equal(unb64(payloads[0]!.metadata['encryption-key-id']!), key.id);
    assert.doesNotMatch(unb64(payloads[0]!.data), /looked at/);

    // Under a namespace segment too, as `temporal --codec-endpoint 'http://…/{namespace}'` sends it.
    const decoded = await post('/default/decode', JSON.stringify({ payloads }));
    assert.equal(decoded.status, 200);
    const back = ((await decoded.json()) as { payloads: JsonPayload[] }).payloads;
    assert.deepEqual(back, [jsonPayload(approval), jsonPayload('second')]);
    assert.deepEqual(JSON.parse(unb64(back[0]!.data)), approval);
  });

  test('decode passes payloads that were never encrypted through unchanged', async () => {
    const clear = [jsonPayload({ purpose: 'recorded before the codec' })];
    const response = await post('/decode', JSON.stringify({ payloads: clear }), { Origin: 'http://localhost:8233' });
    assert.equal(response.status, 200);
    assert.deepEqual(((await response.json()) as { payloads: JsonPayload[] }).payloads, clear);
  });

  test('the preflight of the UI origin allows POST with Content-Type and X-Namespace', async () => {
    const response = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: ui, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-namespace' },
    });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('access-control-allow-origin'), ui);
    assert.match(response.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.match(response.headers.get('access-control-allow-headers') ?? '', /X-Namespace/i);
    assert.match(response.headers.get('access-control-allow-headers') ?? '', /Content-Type/i);
  });

  test('another origin is refused, preflight and request alike, with no CORS grant', async () => {
    const evil = 'https://attacker.example';
    const preflight = await fetch(`${server.url}/decode`, { method: 'OPTIONS', headers: { Origin: evil, 'Access-Control-Request-Method': 'POST' } });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    const request = await post('/decode', JSON.stringify({ payloads: [] }), { Origin: evil });
    assert.equal(request.status, 403);
    assert.equal(request.headers.get('access-control-allow-origin'), null);
    const { error } = (await request.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, 'ORIGIN_REFUSED');
    assert.match(error.message, /origin https:\/\/attacker\.example may not use this codec server; allowed: http:\/\/127\.0\.0\.1:8233, http:\/\/localhost:8233/);
  });

  test('bad bodies are 400 with a message that says what to send', async () => {
    const notJson = await post('/decode', '{"payloads": [');
    assert.equal(notJson.status, 400);
    assert.match(((await notJson.json()) as { error: { message: string } }).error.message, /^the body is not JSON .*send \{"payloads"/);

    const wrongShape = await post('/encode', JSON.stringify({ payloads: [{ metadata: { encoding: 'json plain!' }, data: 42 }] }));
    assert.equal(wrongShape.status, 400);
    const message = ((await wrongShape.json()) as { error: { message: string } }).error.message;
    assert.match(message, /payloads\.0\.metadata\.encoding: must be base64/);
    assert.match(message, /payloads\.0\.data: Expected string, received number/);

    const missing = await post('/encode', JSON.stringify({ items: [] }));
    assert.equal(missing.status, 400);
  });

  test('an empty body is an empty list, as the temporal CLI sends it when it has nothing to code', async () => {
    const empty = await post('/encode', '{}');
    assert.equal(empty.status, 200);
    assert.deepEqual(await empty.json(), { payloads: [] });
  });

  test('a payload under an unknown key id is 422 naming the key id; wrong paths and methods are 404 and 405', async () => {
    const other = new AesGcmPayloadCodec([generateCodecKey()]);
    const [foreign] = await other.encode([defaultPayloadConverter.toPayload('x')]);
    const body = {
      payloads: [
        {
          metadata: Object.fromEntries(Object.entries(foreign!.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
          data: Buffer.from(foreign!.data!).toString('base64'),
        },
      ],
    };
    const response = await post('/decode', JSON.stringify(body));
    assert.equal(response.status, 422);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, 'PAYLOAD_UNDECRYPTABLE');
    assert.match(error.message, new RegExp(`key id ${other.currentKeyId}`));

    assert.equal((await post('/unknown', '{}')).status, 404);
    assert.equal((await fetch(`${server.url}/decode`)).status, 405);
  });
});
