/**
 * The rules by which a property a plan set is compared with what a service reads back
 * (DESIGN §14): as CloudFormation means it, intrinsics never compared, in words a reviewer reads.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { comparePlanned, decodePolicy, describeMismatches, isIntrinsic, plannedAt, resolveStackRefs, sameJson, sameScalar } from '../../src/adapters/aws-property-compare';
import { AWS_SERVICES } from '../../src/adapters/aws-services';

const POLICY = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }] };

describe('comparing planned properties with what a service reads back', () => {
  test('a bucket whose versioning was not applied is one mismatch at its path, "unset" in words', () => {
    const mismatches = comparePlanned({ BucketName: 'b', VersioningConfiguration: { Status: 'Enabled' } }, [
      { path: 'BucketName', value: 'b' },
      { path: 'VersioningConfiguration.Status', value: undefined },
    ]);
    assert.deepEqual(mismatches, [{ path: 'Properties.VersioningConfiguration.Status', planned: 'Enabled', observed: null }]);
    assert.equal(describeMismatches('moto', mismatches), 'moto did not apply Properties.VersioningConfiguration.Status: planned Enabled, reads unset');
  });

  test('numbers equal numeric strings, booleans equal "true"/"false"; other differences are differences', () => {
    assert.ok(sameScalar(60, '60'));
    assert.ok(sameScalar('60', 60.0));
    assert.ok(sameScalar(true, 'true'));
    assert.ok(sameScalar('False', false));
    assert.ok(!sameScalar(60, '30'));
    assert.ok(!sameScalar(true, 'yes'));
    assert.ok(!sameScalar(1, true), 'a number is not a boolean');
    assert.ok(!sameScalar('Enabled', 'enabled'), 'text is compared exactly');
    assert.ok(!sameScalar(0, ''), 'an empty text is no number');
    assert.deepEqual(
      comparePlanned({ VisibilityTimeout: 60, FifoQueue: false, DelaySeconds: '5' }, [
        { path: 'VisibilityTimeout', value: '60' },
        { path: 'FifoQueue', value: undefined, unset: false },
        { path: 'DelaySeconds', value: '0' },
      ]),
      [{ path: 'Properties.DelaySeconds', planned: '5', observed: '0' }],
    );
  });

  test('a property the plan does not set is not compared, nor is one set through an intrinsic', () => {
    assert.ok(isIntrinsic({ Ref: 'Queue' }));
    assert.ok(isIntrinsic({ 'Fn::GetAtt': ['Queue', 'Arn'] }));
    assert.ok(isIntrinsic({ 'Fn::Sub': '${AWS::StackName}-q' }));
    assert.ok(!isIntrinsic({ Ref: 'x', Other: 1 }), 'two keys is a plain object');
    assert.ok(!isIntrinsic({ Status: 'Enabled' }));
    const observed = [
      { path: 'QueueName', value: 'made-up-name' },
      { path: 'VisibilityTimeout', value: '30' },
      { path: 'VersioningConfiguration.Status', value: 'Suspended' },
      { path: 'PolicyDocument', value: '{}', as: 'policy' as const },
    ];
    const planned = {
      QueueName: { 'Fn::Sub': '${AWS::StackName}-queue' },
      VersioningConfiguration: { 'Fn::If': ['On', { Status: 'Enabled' }, { Ref: 'AWS::NoValue' }] },
      PolicyDocument: { Statement: [{ Effect: 'Allow', Action: '*', Resource: { 'Fn::GetAtt': ['Bucket', 'Arn'] } }] },
    };
    assert.deepEqual(comparePlanned(planned, observed), []);
    assert.deepEqual(plannedAt(planned, 'VersioningConfiguration.Status'), { kind: 'unknown' });
    assert.deepEqual(plannedAt(planned, 'VisibilityTimeout'), { kind: 'absent' });
    assert.deepEqual(plannedAt({ Roles: ['a', 'b'] }, 'Roles.1'), { kind: 'value', value: 'b' });
  });

  test('JSON documents compare parsed, whatever their text looks like; IAM documents URL-decoded too', () => {
    const pattern = { source: ['aws.s3'], 'detail-type': ['Object Created'] };
    assert.deepEqual(comparePlanned({ EventPattern: pattern }, [{ path: 'EventPattern', value: JSON.stringify(pattern, null, 2), as: 'json' }]), []);
    assert.deepEqual(
      comparePlanned({ EventPattern: JSON.stringify(pattern) }, [{ path: 'EventPattern', value: JSON.stringify(pattern), as: 'json' }]),
      [],
      'a planned document may be text too',
    );
    const changed = comparePlanned({ EventPattern: pattern }, [{ path: 'EventPattern', value: JSON.stringify({ source: ['aws.ec2'] }), as: 'json' }]);
    assert.deepEqual(changed, [{ path: 'Properties.EventPattern', planned: pattern, observed: { source: ['aws.ec2'] } }]);
    assert.deepEqual(decodePolicy(encodeURIComponent(JSON.stringify(POLICY))), POLICY);
    assert.deepEqual(comparePlanned({ AssumeRolePolicyDocument: POLICY }, [{ path: 'AssumeRolePolicyDocument', value: encodeURIComponent(JSON.stringify(POLICY)), as: 'policy' }]), []);
    assert.deepEqual(comparePlanned({ AssumeRolePolicyDocument: POLICY }, [{ path: 'AssumeRolePolicyDocument', value: JSON.stringify(POLICY), as: 'policy' }]), [], 'as moto gives it');
    assert.ok(!sameJson({ a: [1, 2] }, { a: [2, 1] }), 'a list in a document keeps its order');
    assert.ok(sameJson({ a: 1, b: undefined }, { a: '1' }), 'an undefined member is no member; leaves as scalars');
  });

  test('sets ignore order; subsets allow more; tags ignore the aws: ones the service adds', () => {
    const keys = [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ];
    assert.deepEqual(comparePlanned({ KeySchema: keys }, [{ path: 'KeySchema', value: [...keys].reverse(), as: 'set' }]), []);
    assert.equal(comparePlanned({ KeySchema: keys }, [{ path: 'KeySchema', value: keys.slice(0, 1), as: 'set' }]).length, 1);
    assert.deepEqual(comparePlanned({ Roles: ['a'] }, [{ path: 'Roles', value: ['b', 'a'], as: 'subset' }]), []);
    assert.equal(comparePlanned({ Roles: ['a', 'c'] }, [{ path: 'Roles', value: ['b', 'a'], as: 'subset' }]).length, 1);
    const tags = [{ Key: 'team', Value: 'x' }];
    assert.deepEqual(comparePlanned({ Tags: tags }, [{ path: 'Tags', value: [{ Key: 'aws:cloudformation:stack-name', Value: 's' }, ...tags], as: 'tags' }]), []);
    assert.deepEqual(comparePlanned({ Tags: tags }, [{ path: 'Tags', value: [], as: 'tags' }]), [{ path: 'Properties.Tags', planned: tags, observed: [] }]);
  });

  test("a Ref of another resource of the stack is that resource's physical id; other Refs stay unknown", () => {
    const planned = { Roles: [{ Ref: 'Role' }, 'literal'], PolicyName: { Ref: 'PolicyNameParameter' }, Nested: { Arn: { Ref: 'Queue' } } };
    assert.deepEqual(resolveStackRefs(planned, { Role: 'app-role', Queue: 'https://q' }), {
      Roles: ['app-role', 'literal'],
      PolicyName: { Ref: 'PolicyNameParameter' },
      Nested: { Arn: 'https://q' },
    });
  });

  test('the same disagreement read twice (one policy on two roles) is reported once; long values are cut in words', () => {
    const big = { Statement: Array.from({ length: 20 }, (_, index) => ({ Sid: `s${index}`, Effect: 'Allow', Action: '*', Resource: '*' })) };
    const mismatches = comparePlanned({ PolicyDocument: big }, [
      { path: 'PolicyDocument', value: '{}', as: 'policy' },
      { path: 'PolicyDocument', value: '{}', as: 'policy' },
    ]);
    assert.equal(mismatches.length, 1);
    const words = describeMismatches('staging', mismatches);
    assert.match(words, /^staging did not apply Properties\.PolicyDocument: planned \{"Statement".*…, reads \{\}$/);
    assert.ok(words.length < 300, words);
  });

  test('the table covers the types the plane checks, each named where a template can name it', () => {
    assert.deepEqual(Object.keys(AWS_SERVICES).sort(), [
      'AWS::DynamoDB::Table',
      'AWS::Events::Rule',
      'AWS::IAM::ManagedPolicy',
      'AWS::IAM::Policy',
      'AWS::IAM::Role',
      'AWS::IAM::User',
      'AWS::KMS::Key',
      'AWS::Logs::LogGroup',
      'AWS::S3::Bucket',
      'AWS::SNS::Topic',
      'AWS::SQS::Queue',
      'AWS::SSM::Parameter',
    ]);
    for (const [type, service] of Object.entries(AWS_SERVICES)) {
      assert.equal(service.nameProperty === undefined, service.byName === undefined, `${type}: a name property comes with its lookup`);
    }
  });
});
