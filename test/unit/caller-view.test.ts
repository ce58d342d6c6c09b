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

test("a run against a target shows its agent the plan's digest, and nothing drawn from the target's stack", () => {
  const plan = {
    digest: 'd'.repeat(64),
    changes: [
      {
        action: 'Modify',
        logicalId: 'Db',
        type: 'AWS::RDS::DBInstance',
        properties: [{ path: 'Properties.DBInstanceClass', before: 'db.r5.24xlarge', after: 'db.t3.micro' }],
        replacement: 'False',
        dataLoss: false,
        retained: false,
      },
    ],
    unsupported: [],
    security: [{ logicalId: 'Admin', type: 'AWS::IAM::Role', reason: 'removes an IAM role' }],
    conditions: {},
    skipped: [],
    outputs: [{ name: 'Url', action: 'Remove', before: { Value: 'https://internal.example' }, after: null }],
    warnings: [],
    crossCheck: ["staging's change set says Remove for Admin"],
  };
  const run = {
    runId: 'r2',
    principal: 'agent-7',
    target: 'production',
    state: 'AWAITING_APPROVAL',
    approvals: [],
    approvalAttempts: [],
    waitingFor: '',
    events: [],
    error: null,
    decision: null,
    plan,
  } as unknown as IacStatus;
  const seen = agentIacView(run);
  assert.equal(seen.plan?.digest, plan.digest);
  for (const secret of ['db.r5.24xlarge', 'Admin', 'internal.example']) assert.ok(!JSON.stringify(seen).includes(secret), secret);
  assert.deepEqual(agentIacView({ ...run, target: null } as unknown as IacStatus).plan, plan, "a sandbox's plan is the agent's own to read");
});
