/**
 * synthesizeCdkApp against the real CDK CLI and aws-cdk-lib (DESIGN §14, "CDK"). It needs
 * neither Temporal nor Docker. Variants of test/fixtures/cdk-app are written under the
 * checkout's .data/, so that Node resolves aws-cdk-lib from the checkout's node_modules.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { cdkSynthEnvironment, synthesizeCdkApp } from '../src/client/cdk-synth';
import { eventually } from './harness/eventually';
import { rejectsWith } from './helpers/rejects-with';

const REPO_ROOT = path.resolve(__dirname, '..');
const FIXTURE = path.join(__dirname, 'fixtures', 'cdk-app');
const STACK_FILE = path.join('lib', 'cdk-app-stack.js');
const BIN_FILE = path.join('bin', 'cdk-app.js');

describe('synthesizeCdkApp (the real cdk CLI on a CDK app)', () => {
  fs.mkdirSync(path.join(REPO_ROOT, '.data'), { recursive: true });
  const scratch = fs.mkdtempSync(path.join(REPO_ROOT, '.data', 'cdk-synth-test-'));
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));

  /** A copy of the fixture app with some of its files rewritten. */
  function variant(name: string, edits: { stack?: (source: string) => string; bin?: string }): string {
    const dir = path.join(scratch, name);
    fs.cpSync(FIXTURE, dir, { recursive: true });
    if (edits.stack !== undefined) fs.writeFileSync(path.join(dir, STACK_FILE), edits.stack(fs.readFileSync(path.join(dir, STACK_FILE), 'utf8')));
    if (edits.bin !== undefined) fs.writeFileSync(path.join(dir, BIN_FILE), edits.bin);
    return dir;
  }
  /** Adds `code` to the fixture stack's constructor, after its bucket. */
  const afterBucket = (code: string) => (source: string) => {
    const bucket = "new s3.Bucket(this, 'CdkAppBucket');";
    assert.ok(source.includes(bucket), 'the fixture stack makes its bucket');
    return source.replace(bucket, `${bucket}\n    ${code}`);
  };

  test('the fixture app gives one stack: one bucket, one queue, no CDK metadata, the bootstrap version parameter; nothing left behind', async (t) => {
    const tmp = path.join(scratch, 'tmp');
    fs.mkdirSync(tmp);
    const previousTmp = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    const started = Date.now();
    try {
      const stack = await synthesizeCdkApp(FIXTURE);
      t.diagnostic(`cdk synth of the fixture took ${Date.now() - started} ms`);

      assert.equal(stack.stackName, 'CdkAppStack');
      const resources = Object.values(stack.template.Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>);
      assert.deepEqual(resources.map((resource) => resource.Type).sort(), ['AWS::S3::Bucket', 'AWS::SQS::Queue']);
      assert.equal(resources.find((resource) => resource.Type === 'AWS::SQS::Queue')?.Properties?.VisibilityTimeout, 30);
      assert.ok(!resources.some((resource) => resource.Type === 'AWS::CDK::Metadata'), 'version reporting is off');
      assert.deepEqual(stack.bootstrap, { ssmParameters: [{ name: '/cdk-bootstrap/hnb659fds/version', minimumVersion: 6 }] });
    } finally {
      if (previousTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previousTmp;
    }
    assert.deepEqual(fs.readdirSync(tmp), [], 'the cloud assembly is removed');
    assert.deepEqual(
      fs.readdirSync(FIXTURE).sort(),
      ['.gitignore', '.npmignore', 'README.md', 'bin', 'cdk.json', 'lib', 'package.json'],
      'the app folder gets no cdk.out or cdk.context.json',
    );
  });

  test('an app with a file asset is refused, naming the asset', async () => {
    const app = variant('file-asset', { stack: afterBucket("new (require('aws-cdk-lib/aws-s3-assets').Asset)(this, 'Code', { path: __dirname });") });
    await assert.rejects(
      synthesizeCdkApp(app),
      rejectsWith('INVALID_INPUT', /has 1 file asset\(s\) \(Code\) and 0 image asset\(s\): the sandbox plane applies templates only; publishing assets is not supported/),
    );
  });

  test('a folder without cdk.json, a file and a missing path are refused before anything runs', async () => {
    const bare = path.join(scratch, 'bare');
    fs.mkdirSync(bare);
    await assert.rejects(synthesizeCdkApp(bare), rejectsWith('INVALID_INPUT', /has no cdk\.json/));
    await assert.rejects(synthesizeCdkApp(path.join(FIXTURE, 'cdk.json')), rejectsWith('INVALID_INPUT', /is not a folder/));
    await assert.rejects(synthesizeCdkApp(path.join(scratch, 'absent')), rejectsWith('INVALID_INPUT', /does not exist/));
    await assert.rejects(synthesizeCdkApp(FIXTURE, { timeoutMs: 0, stack: '' }), rejectsWith('INVALID_INPUT', /stack: must name a stack; timeoutMs: must be positive/));
  });

  test("an app that throws at synth is refused with the app's own error text", async () => {
    const app = variant('throws', { stack: afterBucket("throw new Error('the fixture refuses to synthesize: no bucket name');") });
    await assert.rejects(
      synthesizeCdkApp(app),
      rejectsWith('INVALID_INPUT', /^the CDK app failed to synthesize \(cdk synth exited with 1\):\n[^]*Error: the fixture refuses to synthesize: no bucket name/),
    );
  });

  test('an app of two stacks needs `stack`; with it, that stack is returned, under its stack name', async () => {
    const app = variant('two-stacks', {
      bin: [
        "const cdk = require('aws-cdk-lib/core');",
        "const { CdkAppStack } = require('../lib/cdk-app-stack');",
        'const app = new cdk.App();',
        "new CdkAppStack(app, 'First');",
        "new CdkAppStack(app, 'Second', { stackName: 'second-custom' });",
        '',
      ].join('\n'),
    });
    await assert.rejects(synthesizeCdkApp(app), rejectsWith('INVALID_INPUT', /has 2 stacks \(First, Second\): pass --stack NAME/));
    assert.equal((await synthesizeCdkApp(app, { stack: 'Second' })).stackName, 'second-custom');
    await assert.rejects(synthesizeCdkApp(app, { stack: 'Third' }), rejectsWith('INVALID_INPUT', /has no stack Third; its stacks: First, Second/));
  });

  test('an app of stages only is refused, naming them', async () => {
    const app = variant('stage-only', {
      bin: [
        "const cdk = require('aws-cdk-lib/core');",
        "const { CdkAppStack } = require('../lib/cdk-app-stack');",
        'const app = new cdk.App();',
        "new CdkAppStack(new cdk.Stage(app, 'Prod'), 'Inner');",
        '',
      ].join('\n'),
    });
    await assert.rejects(synthesizeCdkApp(app), rejectsWith('INVALID_INPUT', /defines no stack at its top level; stacks inside stages \(Prod\) are not supported/));
  });

  test("the caller's AWS credentials never reach the CLI or the app", async () => {
    const credentials = { AWS_ACCESS_KEY_ID: 'AKIASANDBOXPLANETEST', AWS_SECRET_ACCESS_KEY: 'not-a-secret', AWS_PROFILE: 'prod' };
    const env = cdkSynthEnvironment('/tmp/out', { ...credentials, AWS_REGION: 'eu-west-1', PATH: '/usr/bin' });
    for (const name of Object.keys(credentials)) assert.equal(env[name], undefined, name);
    assert.equal(env.AWS_REGION, 'eu-west-1');
    assert.equal(env.AWS_EC2_METADATA_DISABLED, 'true');
    assert.equal(env.AWS_SHARED_CREDENTIALS_FILE, path.join('/tmp/out', 'no-aws-credentials'));

    const app = variant('sees-env', {
      stack: afterBucket("new (require('aws-cdk-lib/core').CfnOutput)(this, 'Seen', { value: `${process.env.AWS_ACCESS_KEY_ID ?? 'none'} ${process.env.CDK_DEFAULT_ACCOUNT ?? 'none'}` });"),
    });
    const saved = { ...process.env };
    Object.assign(process.env, credentials);
    try {
      const { template } = await synthesizeCdkApp(app);
      assert.deepEqual((template.Outputs as Record<string, unknown>).Seen, { Value: 'none none' });
    } finally {
      for (const name of Object.keys(credentials)) if (saved[name] === undefined) delete process.env[name];
    }
  });

  test('a synth that outlives its timeout is stopped with the app it runs; an aborted one too', async () => {
    const hang = (name: string) => {
      const dir = variant(name, {
        bin: "require('node:fs').writeFileSync(require('node:path').join(__dirname, 'pid'), String(process.pid));\nsetInterval(() => {}, 1000);\n",
      });
      return { dir, pid: () => Number(fs.readFileSync(path.join(dir, 'bin', 'pid'), 'utf8')) };
    };
    // A killed process whose parent died first may stay a zombie where nothing reaps orphans (pid 1 in a container).
    const gone = (pid: number) => {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, { encoding: 'utf8', flag: 'r' }).toString();
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z') ? true : undefined;
    };
    const goneOrZombie = (pid: number) => () => {
      try {
        return gone(pid);
      } catch {
        return true;
      }
    };

    const timedOut = hang('hangs');
    await assert.rejects(synthesizeCdkApp(timedOut.dir, { timeoutMs: 5_000 }), rejectsWith('INVALID_INPUT', /did not synthesize within 5000 ms and was stopped/));
    await eventually('the app the CLI started to be killed too', goneOrZombie(timedOut.pid()), 5_000);

    const aborted = hang('aborted');
    const controller = new AbortController();
    const pidFile = path.join(aborted.dir, 'bin', 'pid');
    const watch = setInterval(() => fs.existsSync(pidFile) && controller.abort(), 100);
    try {
      await assert.rejects(synthesizeCdkApp(aborted.dir, { signal: controller.signal }), { name: 'AbortError' });
    } finally {
      clearInterval(watch);
    }
    await eventually('the aborted app to be killed', goneOrZombie(aborted.pid()), 5_000);
  });
});
