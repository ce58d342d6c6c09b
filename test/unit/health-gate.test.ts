import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { waitUntilHealthy, type HealthProbe } from '../../src/adapters/health-gate';
import { SandboxPlaneError } from '../../src/domain/errors';

const access = { endpoint: 'http://127.0.0.1:1' };
const context = { heartbeat: () => undefined };

/** A probe that answers `detail` at first, then hangs until its look is aborted. */
function answersThenHangs(answers: number, detail: string): HealthProbe {
  let calls = 0;
  return (_access, signal) => {
    calls += 1;
    if (calls <= answers) return Promise.resolve({ healthy: false, registeredServices: [], readyServices: [], detail });
    return new Promise((_resolve, reject) => {
      // AbortSignal.timeout's timer does not hold the process open; a hanging connection would.
      const held = setTimeout(() => undefined, 60_000);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(held);
          reject(signal.reason as Error);
        },
        { once: true },
      );
    });
  };
}

async function failureOf(work: Promise<unknown>): Promise<SandboxPlaneError> {
  try {
    await work;
  } catch (err) {
    assert.ok(err instanceof SandboxPlaneError);
    return err;
  }
  assert.fail('the gate passed');
}

describe('waitUntilHealthy', () => {
  test('a last look cut short by the deadline keeps the emulator’s last answer as the reason', async () => {
    const err = await failureOf(waitUntilHealthy(answersThenHangs(1, 'init has not reached ready'), access, context, { timeoutMs: 200 }));
    assert.equal(err.code, 'EMULATOR_UNHEALTHY');
    assert.match(err.message, /last: init has not reached ready/);
  });

  test('an emulator that never answers is named by its timeouts', async () => {
    const err = await failureOf(waitUntilHealthy(answersThenHangs(0, 'unused'), access, context, { timeoutMs: 300, attemptTimeoutMs: 100 }));
    assert.match(err.message, /last: The operation was aborted due to timeout/);
  });
});
