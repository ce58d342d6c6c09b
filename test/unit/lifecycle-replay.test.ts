import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { testWorkflowBundle } from '../helpers/workflow-bundle';

/**
 * Histories recorded (with `temporal workflow show -o json`) on the lifecycle as it was
 * before the state machine: every path, including a run still READY when recorded.
 * They must replay on the current code, so sandboxes that were running at an upgrade
 * finish under the version they started with (docs/lifecycle.md, "Upgrades").
 */
const FIXTURES = path.join(__dirname, '..', 'fixtures', 'histories-v1');

test('histories recorded before the state machine replay on the current workflow code', async () => {
  const files = fs.readdirSync(FIXTURES).filter((file) => file.endsWith('.json'));
  assert.ok(files.length >= 7, `found ${files.length} recorded histories`);
  const workflowBundle = await testWorkflowBundle();
  for (const file of files) {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')));
    await assert.doesNotReject(Worker.runReplayHistory({ workflowBundle }, history, `sandbox-${file}`), file);
  }
});
