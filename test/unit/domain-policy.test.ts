import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatDuration, parseDuration } from '../../src/domain/duration';
import { evaluatePolicy, principalMatches, type PolicyRow } from '../../src/domain/policy';
import { sandboxRequestSchema, canonicalRequestText } from '../../src/domain/sandbox-request';
import { screenRequest, type ScreeningInput } from '../../src/domain/screening';
import { checkExtension, grantTtl } from '../../src/domain/ttl';
import { SandboxPlaneError } from '../../src/domain/errors';
import { parseOrThrow } from '../../src/domain/validation';

let nextId = 1;
function row(partial: Partial<PolicyRow>): PolicyRow {
  return {
    id: nextId++,
    principalPattern: 'agent-*',
    capability: 'cloud.sandbox',
    effect: 'allow',
    maxTtlSeconds: null,
    services: null,
    maxConcurrent: null,
    ...partial,
  };
}

const ALL_ON = {
  CLOUD_SANDBOX: true,
  IAC_LOCAL: true,
  STAGING_APPLY: true,
  PRODUCTION_APPLY: true,
  ADAPTER_MEMORY: true,
  ADAPTER_MOTO: true,
  ADAPTER_FLOCI: true,
};
const TTL = { defaultTtlSeconds: 1800, ttlCeilingSeconds: 4 * 3600, maxLifetimeSeconds: 24 * 3600 };

function screening(overrides: Partial<ScreeningInput> & { services?: string[]; capability?: ScreeningInput['request']['capability'] }): ScreeningInput {
  const request = {
    ...sandboxRequestSchema.parse({ principal: 'agent-1', services: overrides.services ?? ['s3'], capability: overrides.capability }),
    id: 'x',
  };
  return { request, flags: ALL_ON, policies: [row({})], liveSandboxes: 0, availableAdapters: ['memory'], ttl: TTL, ...overrides };
}

describe('policy evaluation', () => {
  test('principal patterns: exact names and * globs, nothing else is special', () => {
    assert.ok(principalMatches('agent-*', 'agent-7'));
    assert.ok(principalMatches('*', 'anyone'));
    assert.ok(principalMatches('ci.bot', 'ci.bot'));
    assert.ok(!principalMatches('ci.bot', 'cixbot'), 'a dot is a dot');
    assert.ok(!principalMatches('agent-*', 'xagent-7'));
  });

  test('no matching row is a denial', () => {
    const outcome = evaluatePolicy({ principal: 'stranger', capability: 'cloud.sandbox', services: ['s3'], policies: [row({})] });
    assert.equal(outcome.effect, 'deny');
    assert.equal(outcome.code, 'POLICY_DENIED');
    assert.match(outcome.reasons[0] ?? '', /no policy row lets stranger use cloud.sandbox/);
  });

  test('the strictest part wins: an ungated service cannot carry a gated one through', () => {
    const policies = [row({ effect: 'allow' }), row({ effect: 'require_approval', services: ['iam'] })];
    assert.equal(evaluatePolicy({ principal: 'agent-1', capability: 'cloud.sandbox', services: ['s3'], policies }).effect, 'allow');
    const bundled = evaluatePolicy({ principal: 'agent-1', capability: 'cloud.sandbox', services: ['iam', 's3'], policies });
    assert.equal(bundled.effect, 'require_approval');
    const denied = evaluatePolicy({
      principal: 'agent-1',
      capability: 'cloud.sandbox',
      services: ['iam', 's3'],
      policies: [...policies, row({ effect: 'deny', services: ['iam'] })],
    });
    assert.equal(denied.effect, 'deny');
  });

  test('a service no row covers is refused as SERVICE_NOT_ALLOWED', () => {
    const outcome = evaluatePolicy({
      principal: 'agent-1',
      capability: 'cloud.sandbox',
      services: ['s3', 'sqs'],
      policies: [row({ services: ['s3'] })],
    });
    assert.equal(outcome.code, 'SERVICE_NOT_ALLOWED');
    assert.match(outcome.reasons[0] ?? '', /no policy row covers sqs/);
  });

  test('staging and production are never better than require_approval', () => {
    for (const capability of ['cloud.staging.apply', 'cloud.production.apply'] as const) {
      const outcome = evaluatePolicy({ principal: 'agent-1', capability, services: ['s3'], policies: [row({ capability, effect: 'allow' })] });
      assert.equal(outcome.effect, 'require_approval', capability);
    }
  });

  test('limits are the tightest among the deciding rows', () => {
    const outcome = evaluatePolicy({
      principal: 'agent-1',
      capability: 'cloud.sandbox',
      services: ['s3'],
      policies: [row({ maxTtlSeconds: 3600, maxConcurrent: 5 }), row({ principalPattern: '*', maxTtlSeconds: 600, maxConcurrent: 2 })],
    });
    assert.equal(outcome.maxTtlSeconds, 600);
    assert.equal(outcome.maxConcurrent, 2);
  });
});

describe('screening order and codes', () => {
  test('a disabled capability flag refuses first', () => {
    const decision = screenRequest(screening({ flags: { ...ALL_ON, CLOUD_SANDBOX: false } }));
    assert.equal(decision.code, 'FLAG_DISABLED');
    assert.match(decision.reasons[0] ?? '', /SANDBOXPLANE_FLAG_CLOUD_SANDBOX/);
  });

  test('staging and production stay behind their flags', () => {
    const decision = screenRequest(screening({ capability: 'cloud.production.apply', flags: { ...ALL_ON, PRODUCTION_APPLY: false } }));
    assert.equal(decision.code, 'FLAG_DISABLED');
  });

  test('a disabled or absent adapter refuses', () => {
    assert.equal(screenRequest(screening({ flags: { ...ALL_ON, ADAPTER_MEMORY: false } })).code, 'FLAG_DISABLED');
    assert.equal(screenRequest(screening({ availableAdapters: [] })).code, 'ADAPTER_UNAVAILABLE');
  });

  test('an unknown service is refused; a Docker-backed one is admitted as UNAVAILABLE', () => {
    assert.equal(screenRequest(screening({ services: ['s3', 'teleport'] })).code, 'SERVICE_UNKNOWN');
    const decision = screenRequest(screening({ services: ['lambda', 's3'] }));
    assert.equal(decision.effect, 'allow');
    assert.deepEqual(decision.fidelity, { lambda: 'UNAVAILABLE', s3: 'PARTIAL' });
  });

  test('TTL over the policy max or the ceiling is refused with the limit named', () => {
    const overPolicy = screenRequest({ ...screening({ policies: [row({ maxTtlSeconds: 600 })] }), request: { ...screening({}).request, ttlSeconds: 601 } });
    assert.equal(overPolicy.code, 'TTL_EXCEEDS_CEILING');
    assert.match(overPolicy.reasons[0] ?? '', /at most 600 \(10m, the policy row's max TTL\), got 601/);
    const overCeiling = screenRequest({ ...screening({}), request: { ...screening({}).request, ttlSeconds: 5 * 3600 } });
    assert.match(overCeiling.reasons[0] ?? '', /global TTL ceiling/);
  });

  test('quota: at the cap is refused', () => {
    const policies = [row({ maxConcurrent: 2 })];
    assert.equal(screenRequest(screening({ policies, liveSandboxes: 1 })).effect, 'allow');
    assert.equal(screenRequest(screening({ policies, liveSandboxes: 2 })).code, 'QUOTA_EXCEEDED');
  });
});

describe('TTL rules', () => {
  test('the default TTL is capped by the policy max', () => {
    assert.deepEqual(grantTtl(undefined, 600, TTL), { ok: true, ttlSeconds: 600, maxTtlSeconds: 600 });
    assert.deepEqual(grantTtl(undefined, null, TTL), { ok: true, ttlSeconds: 1800, maxTtlSeconds: 4 * 3600 });
  });

  test('an extension may not pass now + max TTL, nor the maximum lifetime', () => {
    const base = { nowMs: 0, createdAtMs: 0, expiresAtMs: 600_000, maxTtlSeconds: 3600, maxLifetimeSeconds: 7200 };
    assert.deepEqual(checkExtension({ ...base, extendBySeconds: 3000 }), { ok: true, expiresAtMs: 3_600_000 });
    const pastTtl = checkExtension({ ...base, extendBySeconds: 3001 });
    assert.equal(pastTtl.ok, false);
    const lateInLife = checkExtension({ ...base, nowMs: 6_000_000, expiresAtMs: 6_600_000, extendBySeconds: 1200 });
    assert.ok(!lateInLife.ok && /maximum lifetime of 2h/.test(lateInLife.reason));
  });
});

describe('durations and requests', () => {
  test('durations: 90s, 30m, 2h, 1d', () => {
    assert.equal(parseDuration('90s'), 90);
    assert.equal(parseDuration('30m'), 1800);
    assert.equal(parseDuration('2h'), 7200);
    assert.equal(parseDuration('1d'), 86400);
    for (const bad of ['', '5', '5x', '-1m', '0s', '1.5h']) assert.equal(parseDuration(bad), undefined, bad);
    assert.equal(formatDuration(5400), '90m');
  });

  test('a request gets its defaults, and equal requests have equal canonical text', () => {
    const a = sandboxRequestSchema.parse({ principal: 'agent-1', services: ['SQS', 's3', 's3'] });
    assert.equal(a.capability, 'cloud.sandbox');
    assert.equal(a.adapter, 'memory');
    assert.deepEqual(a.services, ['s3', 'sqs']);
    const b = sandboxRequestSchema.parse({ services: ['s3', 'sqs'], principal: 'agent-1', id: 'other' });
    assert.equal(canonicalRequestText(a), canonicalRequestText(b));
  });

  test('a bad request names every bad field', () => {
    assert.throws(
      () => parseOrThrow(sandboxRequestSchema, { principal: '', services: [], ttlSeconds: -1, extra: 1 }, 'sandbox request'),
      (err: unknown) =>
        err instanceof SandboxPlaneError &&
        err.code === 'INVALID_INPUT' &&
        /principal: must not be empty/.test(err.message) &&
        /services: name at least one service/.test(err.message) &&
        /ttlSeconds: must be positive/.test(err.message) &&
        /extra/.test(err.message),
    );
  });
});
