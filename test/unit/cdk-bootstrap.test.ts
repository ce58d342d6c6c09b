import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CDK_BOOTSTRAP_VERSION, cdkBootstrapNeeds } from '../../src/domain/iac/cdk-bootstrap';

/**
 * What `cdk synth` (CLI 2.1149, aws-cdk-lib 2.278, default synthesizer) wrote for
 * test/fixtures/cdk-app, as it was: the bootstrap parameter and rule are the synthesizer's.
 */
const SYNTHESIZED = {
  Resources: {
    CdkAppBucket3EC8CCE1: { Type: 'AWS::S3::Bucket', UpdateReplacePolicy: 'Retain', DeletionPolicy: 'Retain' },
    CdkAppQueueFB2A6F8C: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 30 }, UpdateReplacePolicy: 'Delete', DeletionPolicy: 'Delete' },
  },
  Parameters: {
    BootstrapVersion: {
      Type: 'AWS::SSM::Parameter::Value<String>',
      Default: '/cdk-bootstrap/hnb659fds/version',
      Description: 'Version of the CDK Bootstrap resources in this environment, automatically retrieved from SSM Parameter Store. [cdk:skip]',
    },
  },
  Rules: {
    CheckBootstrapVersion: {
      Assertions: [
        {
          Assert: { 'Fn::Not': [{ 'Fn::Contains': [['1', '2', '3', '4', '5'], { Ref: 'BootstrapVersion' }] }] },
          AssertDescription: "CDK bootstrap stack version 6 required. Please run 'cdk bootstrap' with a recent version of the CDK CLI.",
        },
      ],
    },
  },
};

/** The version rule as aws-cdk-lib renders it for `required`, on parameter `ref`. */
function versionRule(required: number, ref: string) {
  const refused = Array.from({ length: required - 1 }, (_, index) => String(index + 1));
  return { Assertions: [{ Assert: { 'Fn::Not': [{ 'Fn::Contains': [refused, { Ref: ref }] }] }, AssertDescription: `version ${required} required` }] };
}

describe('cdkBootstrapNeeds', () => {
  test('a real synthesized template needs the bootstrap version parameter at version 6 or later, which CDK_BOOTSTRAP_VERSION satisfies', () => {
    assert.deepEqual(cdkBootstrapNeeds(SYNTHESIZED), { ssmParameters: [{ name: '/cdk-bootstrap/hnb659fds/version', minimumVersion: 6 }] });
    const refused = SYNTHESIZED.Rules.CheckBootstrapVersion.Assertions[0]?.Assert['Fn::Not'][0]?.['Fn::Contains'][0] as string[];
    assert.ok(!refused.includes(String(CDK_BOOTSTRAP_VERSION)), 'the rule accepts CDK_BOOTSTRAP_VERSION');
    assert.ok(Number.isInteger(CDK_BOOTSTRAP_VERSION) && CDK_BOOTSTRAP_VERSION >= 22, 'it also meets the lookup-role (8) and session-tags (22) minimums');
  });

  test("a template without bootstrap needs needs nothing, and SSM parameters of the app's own are not bootstrap needs", () => {
    const handWritten = {
      AWSTemplateFormatVersion: '2010-09-09',
      Parameters: {
        Stage: { Type: 'String', Default: 'dev' },
        AppConfig: { Type: 'AWS::SSM::Parameter::Value<String>', Default: '/my-app/config' },
      },
      Resources: { Queue: { Type: 'AWS::SQS::Queue' } },
    };
    assert.deepEqual(cdkBootstrapNeeds(handWritten), { ssmParameters: [] });
    assert.deepEqual(cdkBootstrapNeeds({}), { ssmParameters: [] });
    assert.deepEqual(cdkBootstrapNeeds({ Parameters: 'not an object', Rules: [] }), { ssmParameters: [] });
  });

  test('a custom qualifier without the rule has no minimum; a custom parameter that the rule checks is found by the rule', () => {
    const withoutRule = { Parameters: { BootstrapVersion: { Type: 'AWS::SSM::Parameter::Value<String>', Default: '/cdk-bootstrap/custom1/version' } } };
    assert.deepEqual(cdkBootstrapNeeds(withoutRule), { ssmParameters: [{ name: '/cdk-bootstrap/custom1/version', minimumVersion: null }] });

    const customParameter = {
      Parameters: { BootstrapVersion: { Type: 'AWS::SSM::Parameter::Value<String>', Default: '/platform/cdk-version' } },
      Rules: { CheckBootstrapVersion: versionRule(22, 'BootstrapVersion') },
    };
    assert.deepEqual(cdkBootstrapNeeds(customParameter), { ssmParameters: [{ name: '/platform/cdk-version', minimumVersion: 22 }] });
  });

  test('a rule that refuses no version accepts any, so the minimum is 1', () => {
    const template = { ...SYNTHESIZED, Rules: { CheckBootstrapVersion: versionRule(1, 'BootstrapVersion') } };
    assert.deepEqual(cdkBootstrapNeeds(template), { ssmParameters: [{ name: '/cdk-bootstrap/hnb659fds/version', minimumVersion: 1 }] });
  });
});
