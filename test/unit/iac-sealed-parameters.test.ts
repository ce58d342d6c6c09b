/** NoEcho parameter values travel sealed (issue 38, DESIGN §14): they open only with the plane's keys, and digests bind a keyed MAC, never the value. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { AesGcmPayloadCodec } from '../../src/codec/aes-gcm-codec';
import { generateCodecKey } from '../../src/codec/codec-keys';
import { iacRequestDigest, iacRunInputSchema } from '../../src/domain/iac/iac-run';
import { templateDigest } from '../../src/domain/iac/plan';
import { isSealedParameterValue, parametersForDigest, sealingProblems } from '../../src/domain/iac/sealed-parameters';

const keys = [generateCodecKey()];
const seal = new AesGcmPayloadCodec(keys).parameterSeal();
const OWNER = { principal: 'agent-1', parameter: 'Password' };
const TEMPLATE = { Parameters: { Password: { Type: 'String', NoEcho: true }, Size: { Type: 'Number', Default: '1' } }, Resources: { Q: { Type: 'AWS::SQS::Queue' } } };

describe('sealed NoEcho parameters', () => {
  test('a sealed value opens with the same keys, under its own name only, and never shows the value', () => {
    const sealed = seal.seal(OWNER, 'hunter2');
    assert.ok(isSealedParameterValue(sealed));
    assert.doesNotMatch(sealed, /hunter2/);
    assert.equal(seal.open(OWNER, sealed), 'hunter2');
    assert.throws(() => seal.open({ ...OWNER, parameter: 'Other' }, sealed), /does not open/, 'moved to another parameter');
    assert.throws(() => seal.open({ ...OWNER, principal: 'agent-2' }, sealed), /does not open/, "copied into another principal's run");
    const stranger = new AesGcmPayloadCodec([generateCodecKey()]).parameterSeal();
    assert.throws(() => stranger.open(OWNER, sealed), /does not open: no key/);
    const tampered = sealed.replace(/:([A-Za-z0-9_-])([A-Za-z0-9_-]*)$/, (_all, first: string, rest: string) => `:${first === 'A' ? 'B' : 'A'}${rest}`);
    assert.throws(() => seal.open(OWNER, tampered), /does not open/);
  });

  test('digests bind the keyed MAC: the same value sealed twice is the same request, another value another, and no unkeyed hash of it is there', () => {
    const run = (password: string) =>
      iacRunInputSchema.parse({
        runId: 'r1',
        mode: 'plan',
        sandboxId: 'sbx-1',
        principal: 'p',
        stack: 's',
        template: TEMPLATE,
        parameters: { Password: seal.seal(OWNER, password) },
        source: { kind: 'template', name: 't' },
      });
    const [first, again, other] = [run('hunter2'), run('hunter2'), run('hunter3')];
    assert.notEqual(first.parameters.Password, again.parameters.Password, 'a fresh IV each time');
    assert.equal(iacRequestDigest(first), iacRequestDigest(again));
    assert.notEqual(iacRequestDigest(first), iacRequestDigest(other));
    assert.equal(templateDigest(TEMPLATE, first.parameters), templateDigest(TEMPLATE, again.parameters));
    const forDigest = JSON.stringify(parametersForDigest(first.parameters));
    assert.doesNotMatch(forDigest, new RegExp(createHash('sha256').update('hunter2').digest('hex')));
    assert.equal(parametersForDigest(first.parameters).Password, seal.digestForm(OWNER, 'hunter2'));
  });

  test('a NoEcho value in clear is refused, and so is sealed text for a parameter that is not NoEcho; a sealed NoEcho value and plain text pass', () => {
    assert.match(sealingProblems(TEMPLATE, { Password: 'hunter2', Size: '2' }).join(), /NoEcho Password arrived in clear/);
    assert.match(sealingProblems(TEMPLATE, { Password: seal.seal(OWNER, 'x'), Size: seal.seal({ ...OWNER, parameter: 'Size' }, '3') }).join(), /Size carry sealed values but are not NoEcho/);
    assert.deepEqual(sealingProblems(TEMPLATE, { Password: seal.seal(OWNER, 'x'), Size: '2' }), []);
  });
});
