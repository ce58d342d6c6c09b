/** Run ids a caller may choose (issue 39, DESIGN §18): never one that names a plane workflow. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { iacTargetTurnsWorkflowId, iacWorkflowIdFor } from '../../src/domain/contract-names';
import { iacRunIdSchema } from '../../src/domain/iac/iac-run';

test("a run id beginning 'turns-' is refused: its workflow id would be a target's stack-turn keeper", () => {
  assert.equal(iacWorkflowIdFor('turns-production'), iacTargetTurnsWorkflowId('production'), 'the collision this guards against');
  for (const id of ['turns-production', 'turns-staging', 'turns-']) assert.equal(iacRunIdSchema.safeParse(id).success, false, id);
  for (const id of ['ok-run-1', 'run-turns-1', 'turnstile']) assert.equal(iacRunIdSchema.safeParse(id).success, true, id);
});
