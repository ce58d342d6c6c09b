/**
 * A reviewer approves an IaC run (DESIGN §14) from the real Temporal Web UI of the dev
 * server, in a real headless Chromium driven by playwright-core, against a real moto
 * sandbox: the list filtered by `IacState="AWAITING_APPROVAL"`, the run's current details
 * (the plan: digest, changes, Unsupported, Security, the approve payload), and the UI's
 * own "Send a Signal" dialog, where an approval naming another plan is ignored and the
 * payload copied from the details applies the plan. Screenshots of each step go to
 * test-results/ui-iac-approval/.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Browser, Page } from 'playwright-core';
import { PLANE_LABEL } from '../src/domain/docker-labels';
import type { IacStatus } from '../src/domain/iac/iac-run';
import { DockerContainerBroker } from '../src/docker';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { launchBrowser, SCREENSHOT_ROOT, screenshot } from './helpers/browser';
import { eventually } from './harness/eventually';
import { currentDetails, filterList as filterUiList, inUiPage, openAndReadDetails, plainQuotes, sendSignal as sendUiSignal } from './helpers/temporal-ui';
import { testTemporalUi } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const motoImage = process.env.SANDBOXPLANE_MOTO_IMAGE;
const skip = motoImage === undefined && 'needs the moto image and the Docker engine (SANDBOXPLANE_MOTO_IMAGE, set by the test runner)';

const SHOTS = 'ui-iac-approval';
const QUERY = 'IacState="AWAITING_APPROVAL"';
const PRINCIPAL = 'agent-ui-iac';
const QUEUE_NAME = 'ui-iac-queue';
/** A queue, a role (a Security finding), and a subscription of a topic to the queue (moto's CloudFormation skips it: Unsupported). */
const TEMPLATE = JSON.stringify({
  Resources: {
    Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: QUEUE_NAME } },
    Topic: { Type: 'AWS::SNS::Topic', Properties: { TopicName: 'ui-iac-topic' } },
    Subscription: { Type: 'AWS::SNS::Subscription', Properties: { TopicArn: { Ref: 'Topic' }, Protocol: 'sqs', Endpoint: { 'Fn::GetAtt': ['Queue', 'Arn'] } } },
    Role: {
      Type: 'AWS::IAM::Role',
      Properties: {
        RoleName: 'ui-iac-role',
        AssumeRolePolicyDocument: { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }] },
      },
    },
  },
});
/** Another stack's plan: a run that ends PLANNED, which the filtered list must not show, and whose digest is a real but wrong one. */
const OTHER_TEMPLATE = JSON.stringify({ Resources: { Other: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'ui-iac-other' } } } });
/** The details' heading of each section, in the order plan-text.ts writes them. */
const HEADINGS = { security: 'Security', unsupported: 'Unsupported (will NOT be created there)', approve: 'How to approve', changes: 'Changes' } as const;
/** Visibility (the list) trails the workflow by a moment; the list is searched again until then. */
const LIST_TIMEOUT_MS = 30_000;
const TEST_TIMEOUT_MS = 240_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The lines of `text` after the line `heading` up to the line `next` (or the end). */
function section(text: string, heading: string, next?: string): string {
  const lines = text.split('\n').map((line) => line.trim());
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `the details have a section "${heading}":\n${text}`);
  const end = next === undefined ? lines.length : lines.indexOf(next, start);
  assert.ok(end > start, `the section "${next}" follows "${heading}" in the details:\n${text}`);
  return lines
    .slice(start + 1, end)
    .filter((line) => line !== '')
    .join('\n');
}

describe('IaC approval from the Temporal Web UI, in a headless Chromium, of a plan for a moto sandbox', { skip }, () => {
  const broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST });
  let temporal: Awaited<ReturnType<typeof testTemporalUi>> | undefined;
  let uiUrl: string;
  let worker: TestWorker | undefined;
  let plane: string | undefined;
  let alice: TestAuthenticator;
  let browser: Browser | undefined;
  let page: Page;
  const sandboxId = `ui-iac-${randomUUID().slice(0, 8)}`;
  let waiting: IacStatus;
  let planned: IacStatus;

  before(async () => {
    temporal = await testTemporalUi();
    uiUrl = temporal.uiUrl;
    // The default namespace, as ui-approval.test.ts: the UI helpers open /namespaces/default.
    worker = await startTestWorker(temporal.address, { env: { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '1', SANDBOXPLANE_MOTO_IMAGE: motoImage as string } });
    plane = worker.plane.planeId;
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'allow' });
    worker.store.policies.add({ principalPattern: PRINCIPAL, capability: 'cloud.iac.local', effect: 'require_approval' });
    alice = await enrolApprover(worker, 'alice');
    await worker.sandboxes.create({ id: sandboxId, principal: PRINCIPAL, adapter: 'moto', services: ['sqs', 'sns', 'iam', 'cloudformation'] }, { wait: 'ready' });

    planned = await worker.sandboxes.iac.plan({ sandboxId, principal: PRINCIPAL, template: OTHER_TEMPLATE, templateName: 'other.json', stack: 'other' });
    assert.equal(planned.state, 'PLANNED', planned.waitingFor);
    waiting = await worker.sandboxes.iac.apply({ sandboxId, principal: PRINCIPAL, template: TEMPLATE, templateName: 'reviewed.json', stack: 'reviewed' });
    assert.equal(waiting.state, 'AWAITING_APPROVAL', waiting.waitingFor);
    assert.deepEqual(waiting.plan?.unsupported, [{ logicalId: 'Subscription', type: 'AWS::SNS::Subscription' }]);
    assert.deepEqual(
      waiting.plan?.security.map((finding) => finding.logicalId),
      ['Role'],
    );
    const deadline = Date.now() + LIST_TIMEOUT_MS;
    while (!(await worker.sandboxes.iac.list({ sandboxId })).some((row) => row.runId === waiting.runId && row.state === 'AWAITING_APPROVAL')) {
      if (Date.now() > deadline) assert.fail(`visibility never listed ${waiting.workflowId} as AWAITING_APPROVAL`);
      await sleep(200);
    }
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await worker?.stop();
    if (plane !== undefined) for (const container of await broker.list({ [PLANE_LABEL]: plane })) await broker.remove(container.id, { force: true });
    await temporal?.stop();
  });

  const inBrowser = (name: string, steps: () => Promise<void>) => {
    assert.ok(browser !== undefined);
    return inUiPage(browser, SHOTS, name, async (fresh) => {
      page = fresh;
      await steps();
    });
  };
  const filterList = (present: readonly string[], absent: readonly string[]) => filterUiList(page, { shots: SHOTS, uiUrl, query: QUERY, present, absent });
  const sendSignal = (payload: unknown, shot: string) => sendUiSignal(page, { shots: SHOTS, shot, name: 'approve', payload });
  /** Finds the run in the filtered list, opens it, and returns its Current Details as the UI renders them (typographic quotes made plain). */
  const readDetails = async (name: string): Promise<string> => {
    await filterList([waiting.workflowId], [planned.workflowId]);
    await screenshot(page, SHOTS, `${name}-1-filtered-list`);
    const details = await openAndReadDetails(page, waiting.workflowId, /Waiting for a reviewer to approve plan/);
    await screenshot(page, SHOTS, `${name}-2-current-details`);
    return plainQuotes(details);
  };
  /** The approve payload exactly as the details show it, parsed: what a reviewer copies into the dialog. */
  const payloadExample = (details: string): Record<string, unknown> => {
    // The payload is a code block, one field a line (the UI does not wrap it): from its `{` to its `}`.
    const approve = section(details, HEADINGS.approve, HEADINGS.changes);
    const block = /^\{$[\s\S]*?^\}$/m.exec(approve)?.[0];
    assert.ok(block !== undefined, `the details show the approve payload:\n${details}`);
    return JSON.parse(block) as Record<string, unknown>;
  };

  test('the waiting run is listed by IacState and its current details show the plan to review', { timeout: TEST_TIMEOUT_MS }, () =>
    inBrowser('details', async () => {
      const details = await readDetails('details');
      // The details scroll inside their own frame: the rest of them (approving, the changes), and their text beside.
      await currentDetails(page)
        .getByRole('heading', { name: HEADINGS.approve, exact: true })
        .evaluate((element) => element.scrollIntoView({ block: 'start' }));
      await screenshot(page, SHOTS, 'details-3-how-to-approve-and-changes');
      fs.writeFileSync(path.join(SCREENSHOT_ROOT, SHOTS, 'details-current-details.txt'), `${details}\n`);
      const digest = waiting.plan?.digest as string;
      assert.match(details, new RegExp(`^IaC plan AWAITING_APPROVAL: stack reviewed on sandbox ${sandboxId}$`, 'm'));
      assert.ok(details.includes(`Plan digest ${digest}`), `the details show the digest ${digest}:\n${details}`);
      assert.match(details, /^Summary: 4 to add, 0 to change, 0 to remove; 1 unsupported; 1 security$/m);

      const changes = section(details, HEADINGS.changes);
      for (const line of [
        'Add Queue (AWS::SQS::Queue)',
        'Add Role (AWS::IAM::Role)',
        // Where it is listed, the unsupported resource says it will not be made.
        'Add Subscription (AWS::SNS::Subscription) — not created there',
        'Add Topic (AWS::SNS::Topic)',
      ]) {
        assert.ok(changes.split('\n').includes(line), `the changes list "${line}":\n${changes}`);
      }
      assert.match(changes, new RegExp(`^Properties\\.QueueName: null → "${QUEUE_NAME}"$`, 'm'));
      assert.equal(section(details, HEADINGS.unsupported, HEADINGS.approve), 'Subscription (AWS::SNS::Subscription)');
      assert.equal(section(details, HEADINGS.security, HEADINGS.unsupported), 'Role (AWS::IAM::Role): creates an IAM role');

      // A code block: the JSON a reviewer copies, with this run's digest in it.
      assert.deepEqual(payloadExample(details), { approver: '<your name>', reason: '<why>', code: '<6 digits>', planDigest: digest });
      assert.ok(details.includes(`or send the signal approve to workflow ${waiting.workflowId} with:`), details);
    }),
  );

  test('an approve naming another plan is ignored; the payload copied from the details, filled in, applies the plan', { timeout: TEST_TIMEOUT_MS }, () =>
    inBrowser('approve', async () => {
      assert.ok(worker !== undefined);
      const example = payloadExample(await readDetails('approve'));
      const stale = planned.plan?.digest as string;
      assert.notEqual(stale, example.planDigest);

      await sendSignal({ ...example, approver: 'alice', reason: 'another plan', code: await alice.code(), planDigest: stale }, 'approve-3-signal-stale-digest');
      const ignored = await eventually('the stale approve to be judged', () => worker?.store.sandboxes.audit(sandboxId).find((row) => row.action === 'iac_approve_ignored'));
      assert.equal(ignored.actor, 'alice');
      assert.match(ignored.reason ?? '', new RegExp(`^PLAN_STALE: the approve names plan ${stale}, but this run holds plan ${String(example.planDigest)}$`));
      const still = await worker.sandboxes.iac.status(waiting.runId);
      assert.equal(still.state, 'AWAITING_APPROVAL', still.waitingFor);
      assert.deepEqual(still.approvals, []);
      // A signal has no answer of its own: the details say why it did not count.
      const told = await readDetails('after-stale');
      assert.match(told, /The last approve \(alice, [^)]*\) was ignored: PLAN_STALE/, told);
      await page.reload();
      await page.getByRole('heading', { name: waiting.workflowId }).waitFor();
      await page.getByRole('tab', { name: /History/ }).click();
      await page.getByText('Workflow Execution Signaled').first().scrollIntoViewIfNeeded();
      await screenshot(page, SHOTS, 'approve-4-after-stale-signal');

      await sendSignal({ ...example, approver: 'alice', reason: 'reviewed in the UI', code: await alice.code() }, 'approve-5-signal');
      let last: IacStatus | undefined;
      const done = await eventually(
        'the approved run to end',
        async () => {
          last = await worker?.sandboxes.iac.status(waiting.runId);
          return last?.state === 'APPLIED' || last?.state === 'FAILED' ? last : undefined;
        },
        180_000,
        () => `${last?.state}: ${last?.waitingFor}`,
      );
      assert.equal(done.state, 'APPLIED', done.waitingFor);
      assert.deepEqual(
        done.approvals.map((approval) => [approval.approver, approval.reason]),
        [['alice', 'reviewed in the UI']],
      );
      const rows = Object.fromEntries(done.resources.map((row) => [row.logicalId, row.status]));
      assert.equal(rows.Queue, 'VERIFIED');
      assert.equal(rows.Subscription, 'NOT_CREATED');

      const { clientConfig } = await worker.sandboxes.status(sandboxId);
      assert.ok(clientConfig !== null);
      const sqs = new SQSClient({ ...clientConfig, maxAttempts: 1 });
      try {
        assert.match((await sqs.send(new GetQueueUrlCommand({ QueueName: QUEUE_NAME }))).QueueUrl ?? '', new RegExp(`/${QUEUE_NAME}$`));
      } finally {
        sqs.destroy();
      }

      // APPLIED is shown before the run hands its stack back and completes.
      await worker.client.workflow.getHandle(waiting.workflowId).result();
      await page.reload();
      await page.getByRole('heading', { name: waiting.workflowId }).waitFor();
      await page.getByRole('tab', { name: /History/ }).click();
      await page.getByText('Workflow Execution Completed').first().scrollIntoViewIfNeeded();
      await screenshot(page, SHOTS, 'approve-6-after-signal');
      await filterList([], [waiting.workflowId]);
      await screenshot(page, SHOTS, 'approve-7-list-after');
    }),
  );
});
