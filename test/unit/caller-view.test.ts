/** What an agent is shown of who reviewed its request (DESIGN §12): no approver's name, wherever it appears. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentIacView, REVIEWER_FOR_AGENTS } from '../../src/domain/caller-view';
import type { IacStatus } from '../../src/domain/iac/iac-run';

test('an IaC run as its agent sees it: approvals, attempts, waitingFor, events and the error name no approver; other text stays', () => {
  const run = {
    runId: 'r1',
    principal: 'agent-7',
    state: 'DENIED',
    approvals: [{ approver: 'alice', reason: 'alice checked it', at: 't' }],
    approvalAttempts: [{ signal: 'approve', approver: 'mallory', verdict: 'ignored', reason: 'APPROVAL_UNVERIFIED: the code is not a current code of an approver named mallory', at: 't' }],
    waitingFor: 'Denied by bob: too wide',
    events: ['bob denied'],
    error: { code: 'APPROVAL_DENIED', message: 'denied by bob: too wide' },
    decision: { effect: 'require_approval', reasons: ['alicetown is not a name'] },
  } as unknown as IacStatus;
  const seen = agentIacView({ ...run, approvals: [...run.approvals, { approver: 'bob', reason: 'no', at: 't' }] });
  const text = JSON.stringify(seen);
  for (const name of ['"alice"', ' alice ', 'mallory', ' bob', 'by bob']) assert.ok(!text.includes(name), `${name} is hidden: ${text}`);
  assert.deepEqual(
    seen.approvals.map((approval) => approval.approver),
    [REVIEWER_FOR_AGENTS, REVIEWER_FOR_AGENTS],
  );
  assert.equal(seen.error?.message, `denied by ${REVIEWER_FOR_AGENTS}: too wide`);
  assert.deepEqual(seen.decision?.reasons, ['alicetown is not a name'], 'whole names only');
});
