/**
 * A human approves (and denies) a waiting sandbox from the real Temporal Web UI of the
 * dev server, in a real headless Chromium driven by playwright-core: the list filtered
 * by `SandboxState="AWAITING_APPROVAL"`, the workflow's current details, and the UI's
 * own "Send a Signal" dialog. Screenshots of each step go to test-results/ui-approval/.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { SandboxState } from '../src/domain/sandbox-states';
import { enrolApprover, type TestAuthenticator } from './helpers/approvers';
import { launchBrowser, screenshot } from './helpers/browser';
import { waitForState } from './harness/eventually';
import { filterList as filterUiList, inUiPage, openAndReadDetails, plainQuotes, sendSignal as sendUiSignal } from './helpers/temporal-ui';
import { testTemporalUi } from './harness/test-temporal';
import { startTestWorker, type TestWorker } from './harness/test-worker';

const SHOTS = 'ui-approval';
const QUERY = 'SandboxState="AWAITING_APPROVAL"';
/** What the workflow's current details tell a reviewer to send (src/workflows/sandbox-lifecycle.ts). */
const PAYLOAD_EXAMPLE = '{"approver": "<your name>", "reason": "<why>", "code": "<the 6 digits your authenticator shows>"}';
/** Visibility (the list) trails the workflow by a moment; the list is searched again until then. */
const LIST_TIMEOUT_MS = 30_000;
const TEST_TIMEOUT_MS = 180_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntilListed(worker: TestWorker, id: string, state: SandboxState): Promise<void> {
  const deadline = Date.now() + LIST_TIMEOUT_MS;
  while (!(await worker.sandboxes.list({ state })).some((row) => row.id === id)) {
    if (Date.now() > deadline) assert.fail(`visibility never listed ${id} as ${state}`);
    await sleep(200);
  }
}

describe('approval from the Temporal Web UI, in a headless Chromium', () => {
  let temporal: Awaited<ReturnType<typeof testTemporalUi>> | undefined;
  let uiUrl: string;
  let worker: TestWorker;
  let alice: TestAuthenticator;
  let browser: Browser | undefined;
  let page: Page;
  const run = randomUUID().slice(0, 8);
  const readyId = `ui-free-${run}`;
  const approvedId = `ui-approve-${run}`;

  before(async () => {
    temporal = await testTemporalUi();
    uiUrl = temporal.uiUrl;
    worker = await startTestWorker(temporal.address, { adapters: (memory) => ({ memory }) });
    worker.store.policies.add({ principalPattern: 'agent-*', capability: 'cloud.sandbox', effect: 'require_approval' });
    worker.store.policies.add({ principalPattern: 'free-*', capability: 'cloud.sandbox', effect: 'allow' });
    alice = await enrolApprover(worker, 'alice');
    // A sandbox that needs no approval: the filtered list must not show it.
    await worker.sandboxes.create({ id: readyId, principal: 'free-ui', services: ['s3'] }, { wait: 'ready' });
    await waitUntilListed(worker, readyId, 'READY');
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await worker?.stop();
    await temporal?.stop();
  });

  /** The UI's calls to the codec server (test/harness/test-temporal.ts starts it with the UI): `decode 200`, `encode 200`. */
  const codecCalls: string[] = [];

  /** A fresh page per test; a failing step leaves a screenshot of where it stood. */
  async function inBrowser(name: string, steps: () => Promise<void>): Promise<void> {
    assert.ok(browser !== undefined);
    await inUiPage(browser, SHOTS, name, async (fresh) => {
      page = fresh;
      codecCalls.length = 0;
      page.on('response', (response) => {
        const route = /\/(encode|decode)$/.exec(new URL(response.url()).pathname)?.[1];
        if (route !== undefined) codecCalls.push(`${route} ${response.status()}`);
      });
      await steps();
    });
  }

  const filterList = (present: readonly string[], absent: readonly string[]) => filterUiList(page, { shots: SHOTS, uiUrl, query: QUERY, present, absent });
  const sendSignal = (name: string, payload: unknown, shot: string) => sendUiSignal(page, { shots: SHOTS, shot, name, payload });

  /** Creates a sandbox that waits, finds it in the filtered list, opens it and checks the details. */
  async function findWaiting(name: string, id: string, alsoAbsent: readonly string[] = []): Promise<string> {
    const waiting = await worker.sandboxes.create({ id, principal: 'agent-ui', services: ['s3'] });
    assert.equal(waiting.state, 'AWAITING_APPROVAL');
    await waitUntilListed(worker, id, 'AWAITING_APPROVAL');

    await filterList([`sandbox-${id}`], [`sandbox-${readyId}`, ...alsoAbsent]);
    await screenshot(page, SHOTS, `${name}-1-filtered-list`);

    const details = await openAndReadDetails(page, `sandbox-${id}`);
    await screenshot(page, SHOTS, `${name}-2-current-details`);
    // The workflow's details are encrypted payloads: legible only through the codec server.
    assert.ok(codecCalls.includes('decode 200'), `the UI decoded through the codec server: ${codecCalls.join(', ')}`);
    const plain = plainQuotes(details);
    assert.match(plain, /^Waiting for a human's approval until \S+ \(1h\)\./);
    assert.match(plain, /send the signal approve with the JSON payload \{"approver": /);
    assert.match(plain, /to refuse, send deny with the same payload/);
    assert.match(plain, /must be on the approvers list, must not be agent-ui, and gives the code their authenticator shows now\./);
    assert.match(plain, /"code": "<the 6 digits your authenticator shows>"/);
    return details;
  }

  test('approve: found by SandboxState, approved through the Send a Signal dialog, READY', { timeout: TEST_TIMEOUT_MS }, () =>
    inBrowser('approve', async () => {
      await findWaiting('approve', approvedId);
      // What a reviewer types: their name, why, and the code their authenticator app shows now.
      const payload = { approver: 'alice', reason: 'approved in the UI', code: await alice.code() };
      await sendSignal('approve', payload, 'approve-3-signal-dialog');
      assert.ok(codecCalls.includes('encode 200'), `the UI encrypted the signal's input through the codec server: ${codecCalls.join(', ')}`);

      const ready = await waitForState(worker.sandboxes, approvedId, 'READY');
      assert.equal(ready.approval?.approver, 'alice');
      assert.equal(ready.approval?.reason, 'approved in the UI');
      assert.deepEqual(
        ready.approvalAttempts.map((attempt) => [attempt.signal, attempt.approver, attempt.verdict]),
        [['approve', 'alice', 'accepted']],
      );
      assert.equal(ready.endpoint, `memory://${approvedId}`);
      assert.equal(worker.store.sandboxes.audit(approvedId).find((op) => op.action === 'approved')?.actor, 'alice');

      await page.reload();
      await page.getByRole('heading', { name: `sandbox-${approvedId}` }).waitFor();
      await page.getByRole('tab', { name: /History/ }).click();
      await page.getByText('Workflow Execution Signaled').first().scrollIntoViewIfNeeded();
      await screenshot(page, SHOTS, 'approve-4-after-signal');

      // No longer waiting: the same filter no longer shows it.
      await filterList([], [`sandbox-${approvedId}`]);
      await screenshot(page, SHOTS, 'approve-5-list-after');
    }),
  );

  test('deny: found by SandboxState, denied through the Send a Signal dialog, DENIED', { timeout: TEST_TIMEOUT_MS }, () =>
    inBrowser('deny', async () => {
      const id = `ui-deny-${run}`;
      await findWaiting('deny', id, [`sandbox-${approvedId}`]);
      await sendSignal('deny', { approver: 'alice', reason: 'denied in the UI', code: await alice.code() }, 'deny-3-signal-dialog');

      const denied = await waitForState(worker.sandboxes, id, 'DENIED');
      assert.deepEqual(denied.error, { code: 'APPROVAL_DENIED', message: 'denied by alice: denied in the UI' });
      assert.equal(denied.endpoint, null);
      assert.deepEqual(
        worker.store.sandboxes.audit(id).map((op) => op.action),
        ['requested', 'screened', 'denied'],
      );
      assert.deepEqual(
        worker.memory.liveSandboxIds().filter((live) => live === id),
        [],
        'nothing was provisioned',
      );

      await page.reload();
      await page.getByRole('heading', { name: `sandbox-${id}` }).waitFor();
      await page.getByRole('tab', { name: /History/ }).click();
      await page.getByText('Workflow Execution Signaled').first().scrollIntoViewIfNeeded();
      await screenshot(page, SHOTS, 'deny-4-after-signal');

      await filterList([], [`sandbox-${id}`]);
      await screenshot(page, SHOTS, 'deny-5-list-after');
    }),
  );

  test('the UI shows the payload to send verbatim, ready to copy into the signal dialog', { timeout: TEST_TIMEOUT_MS }, () =>
    inBrowser('details', async () => {
      const id = `ui-details-${run}`;
      const details = await findWaiting('details', id);
      // The UI renders current details as Markdown: outside a code span, "<your name>" and
      // "<why>" are HTML tags (dropped) and straight quotes turn typographic, so what a
      // reviewer would copy is {“approver”: “”, “reason”: “”} and no longer JSON.
      assert.ok(details.includes(PAYLOAD_EXAMPLE), `the Current Details in the Web UI should show ${PAYLOAD_EXAMPLE} verbatim (write it as a Markdown code span), but show:\n${details}`);
      await worker.sandboxes.destroy(id, { reason: 'test done' });
    }),
  );
});
