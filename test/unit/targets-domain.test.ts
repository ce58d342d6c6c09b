/** The targets' schemas and the rules that hang on a target's environment (DESIGN §14). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CAPABILITY_RULES } from '../../src/domain/capabilities';
import { storeCommandSchema, RETRY_SAFE_KINDS } from '../../src/domain/store-commands';
import { approvalsNeeded, capabilityOfEnvironment, newTargetSchema, targetNameSchema, TARGET_ENVIRONMENTS } from '../../src/domain/targets';
import { describeIssues } from '../../src/domain/validation';

const valid = { name: 'staging-eu', environment: 'staging', region: 'eu-west-2' } as const;

/** The message of the one refusal of `input`, with its path. */
function refusal(input: unknown): string {
  const parsed = newTargetSchema.safeParse(input);
  assert.equal(parsed.success, false, `${JSON.stringify(input)} was accepted`);
  return describeIssues(parsed.error?.issues ?? []);
}

describe('newTargetSchema', () => {
  test('fills endpoint and profile with null when absent, and keeps them when given', () => {
    assert.deepEqual(newTargetSchema.parse(valid), { ...valid, endpoint: null, profile: null });
    const full = { name: 'prod', environment: 'production', region: 'us-gov-west-1', endpoint: 'https://cloudformation.us-gov-west-1.amazonaws.com', profile: 'plane-prod@acme' };
    assert.deepEqual(newTargetSchema.parse(full), full);
    assert.equal(newTargetSchema.parse({ ...valid, endpoint: 'http://127.0.0.1:5000/' }).endpoint, 'http://127.0.0.1:5000/');
    for (const region of ['us-east-1', 'ap-southeast-2', 'il-central-1', 'us-isob-east-1', 'cn-northwest-1', 'eu-central-2']) {
      assert.equal(newTargetSchema.parse({ ...valid, region }).region, region);
    }
  });

  test('refuses a bad name, saying what a name may be', () => {
    for (const name of ['', 'Staging', '1staging', 'stag_ing', 'staging eu', `a${'b'.repeat(63)}`]) {
      assert.match(refusal({ ...valid, name }), /^name: must start with a lowercase letter and hold only lowercase letters, digits and -/, name);
    }
    assert.equal(targetNameSchema.safeParse(`a${'b'.repeat(62)}`).success, true, '63 characters is the longest name');
  });

  test('refuses a region that is not an AWS region name', () => {
    for (const region of ['US-EAST-1', 'us-east', 'useast1', 'us-east-0', 'us-middle-1', 'earth', '']) {
      assert.match(refusal({ ...valid, region }), /^region: must be an AWS region name/, region);
    }
  });

  test('refuses an endpoint with credentials, a query or a fragment, or one that is not http(s)', () => {
    for (const endpoint of ['https://AKIA:secret@cloudformation.example.com', 'http://user@127.0.0.1:5000', 'http://@127.0.0.1:5000']) {
      assert.match(refusal({ ...valid, endpoint }), /^endpoint: must not carry credentials/, endpoint);
    }
    for (const endpoint of ['https://example.com/?X-Amz-Signature=abc', 'https://example.com/#top', 'https://example.com/?']) {
      assert.match(refusal({ ...valid, endpoint }), /^endpoint: must not have a query or a fragment/, endpoint);
    }
    for (const endpoint of ['ftp://example.com', 'file:///etc/passwd', 'example.com', 'http:example.com', '']) {
      assert.match(refusal({ ...valid, endpoint }), /^endpoint: must be an http/, endpoint);
    }
  });

  test('refuses a profile that is not an AWS profile name, and keys it does not know', () => {
    for (const profile of ['', 'has space', 'semi;colon', 'x'.repeat(65), 'new\nline']) {
      assert.match(refusal({ ...valid, profile }), /^profile: must be 1 to 64 letters, digits/, JSON.stringify(profile));
    }
    assert.match(refusal({ ...valid, secretAccessKey: 'x' }), /Unrecognized key/, 'no room for a secret');
    assert.match(refusal({ ...valid, environment: 'dev' }), /^environment:/);
  });

  test('every bad field is named in one refusal', () => {
    const message = refusal({ name: 'Bad', environment: 'staging', region: 'nowhere', endpoint: 'https://u:p@x.example', profile: 'a b' });
    for (const field of ['name', 'region', 'endpoint', 'profile']) assert.match(message, new RegExp(`(^|; )${field}: `), message);
  });
});

describe('target store commands', () => {
  test('parse with the target schema; list, get and audit alone are retry-safe', () => {
    assert.deepEqual(storeCommandSchema.parse({ kind: 'targets.add', ...valid }), { kind: 'targets.add', ...valid, endpoint: null, profile: null });
    assert.equal(storeCommandSchema.safeParse({ kind: 'targets.add', ...valid, endpoint: 'https://a:b@x.example' }).success, false);
    assert.equal(storeCommandSchema.safeParse({ kind: 'targets.remove', name: 'Nope' }).success, false);
    assert.equal(storeCommandSchema.safeParse({ kind: 'targets.get', name: 'ok', extra: 1 }).success, false);
    const kinds = ['targets.add', 'targets.list', 'targets.remove', 'targets.get', 'targets.audit'] as const;
    assert.deepEqual(
      kinds.filter((kind) => RETRY_SAFE_KINDS.has(kind)),
      ['targets.list', 'targets.get', 'targets.audit'],
    );
  });
});

describe('the environment of a target', () => {
  test('decides the capability, and production needs two approvers where staging needs one', () => {
    assert.deepEqual(
      TARGET_ENVIRONMENTS.map((env) => [env, capabilityOfEnvironment(env), approvalsNeeded(env)]),
      [
        ['staging', 'cloud.staging.apply', 1],
        ['production', 'cloud.production.apply', 2],
      ],
    );
    for (const env of TARGET_ENVIRONMENTS) assert.equal(CAPABILITY_RULES[capabilityOfEnvironment(env)].alwaysRequiresApproval, true, `${env} is always approved`);
  });
});
