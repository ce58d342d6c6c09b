import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { createLogger, redactSecrets } from '../../src/logging/logger';

function capture(): { lines: () => Record<string, unknown>[]; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const credentials = { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret-key-material', sessionToken: 'session-token-material' };

describe('log lines never carry credentials', () => {
  test('a credentials object is masked at any depth, in arrays too, and so are loose secret keys', () => {
    const { stream, lines } = capture();
    const logger = createLogger('info', stream);
    logger.info(
      {
        sandboxId: 'sbx-1',
        credentials,
        runtime: { endpoint: 'http://127.0.0.1:1', handle: { credentials } },
        attempts: [{ details: { credentials, note: 'kept' } }],
        detail: { deeper: { still: { secretAccessKey: 'loose-secret', sessionToken: 'loose-token', taskToken: 'task-token' } } },
      },
      'provisioned',
    );
    const [line] = lines();
    const text = JSON.stringify(line);
    for (const secret of ['secret-key-material', 'session-token-material', 'loose-secret', 'loose-token', 'task-token', 'AKIAEXAMPLE'])
      assert.ok(!text.includes(secret), `no ${secret} in ${text}`);
    assert.equal((line?.runtime as { handle: { credentials: unknown } }).handle.credentials, '[redacted]');
    assert.equal((line?.attempts as { details: { note: string } }[])[0]?.details.note, 'kept', 'what is not secret stays');
    assert.equal(line?.sandboxId, 'sbx-1');
  });

  test("the caller's object is not changed; an error without secrets is left to pino", () => {
    const held = { runtime: { credentials } } as Record<string, unknown>;
    held.self = held;
    const masked = redactSecrets(held);
    assert.equal((held.runtime as { credentials: unknown }).credentials, credentials);
    assert.equal((masked.runtime as { credentials: unknown }).credentials, '[redacted]');
    const plain = { a: 1, b: [1, 2] };
    assert.equal(redactSecrets(plain), plain, 'nothing to mask: the same object');
    const { stream, lines } = capture();
    createLogger('info', stream).error({ err: new Error('boom'), nested: { credentials } }, 'failed');
    const [line] = lines();
    assert.match(JSON.stringify(line?.err), /boom/);
    assert.equal((line?.nested as { credentials: unknown }).credentials, '[redacted]');
  });

  test('an object met twice or in a cycle, an error carrying credentials, AWS spellings and tokens: all masked', () => {
    const handle = { endpoint: 'http://127.0.0.1:1', credentials };
    const looped = { handle } as Record<string, unknown>;
    looped.self = looped;
    const err = Object.assign(new Error('mint failed'), { details: { credentials } });
    const { stream, lines } = capture();
    createLogger('info', stream).error(
      {
        runtime: handle,
        again: handle,
        both: [handle, handle],
        looped: { credentials, handle },
        err,
        aws: { Credentials: { SecretAccessKey: 'pascal-secret' } },
        access: { token: 'operator-token' },
      },
      'failed',
    );
    const text = JSON.stringify(lines()[0]);
    for (const secret of ['secret-key-material', 'session-token-material', 'pascal-secret', 'operator-token']) assert.ok(!text.includes(secret), `no ${secret} in ${text}`);
    assert.match(text, /mint failed/, 'the error is still there');
    const copy = redactSecrets(looped);
    assert.equal(copy.self, copy, 'a cycle stays a cycle, in the copy');
    assert.equal((looped.handle as { credentials: unknown }).credentials, credentials, "the caller's object is not changed");
  });
});
