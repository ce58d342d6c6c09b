import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { dataConverterFor } from '../../src/client/temporal-connection';
import { AesGcmPayloadCodec, generateCodecKey } from '../../src/codec';
import { testWorkflowBundle } from '../helpers/workflow-bundle';

/**
 * Histories recorded (with `temporal workflow show -o json`) on two earlier versions of
 * the lifecycle, every path including runs still open when recorded:
 *
 * - histories-v1: before the state machine (no `lifecycle-state-machine` marker), the
 *   frozen legacy version 1;
 * - histories-v2: the state machine as it was at 5149b2f, before the health watch and
 *   continue-as-new (no `lifecycle-health-watch` marker). Each file is named after its
 *   sandbox id, so it replays under its own workflow id `sandbox-<name>`: the state
 *   machine checks that the request's id is its workflow's.
 *
 * - histories-v3: at 925caa9, with the health watch and continue-as-new but before worker
 *   roles and placement (no `lifecycle-placement` marker; everything on one queue), and
 *   one cleanup sweep from before the per-host sweep (`sweep-ready`, no `sweep-per-host`).
 *
 * - histories-v4: at a3bf161, with worker roles and placement, where placement was an
 *   activity of its own after screening (`placeSandbox`); recorded through the codec
 *   server, so their payloads are in clear. Screening now places an allowed sandbox itself.
 *
 * They must replay on the current code, so sandboxes that were running at an upgrade
 * finish under the version they started with (docs/lifecycle.md, "Upgrades").
 */
const FIXTURES = path.join(__dirname, '..', 'fixtures');
/** With the payload codec on, as every worker runs now: payloads recorded in clear pass through it. */
const WITH_CODEC = dataConverterFor(new AesGcmPayloadCodec([generateCodecKey()]));

function recordedHistories(version: string, minimum: number) {
  const dir = path.join(FIXTURES, version);
  const files = fs.readdirSync(dir).filter((file) => file.endsWith('.json'));
  assert.ok(files.length >= minimum, `found ${files.length} recorded histories in ${version}`);
  return files.map((file) => ({ file, history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))) }));
}

test('histories recorded when placement was an activity of its own replay on the current workflow code', async () => {
  const workflowBundle = await testWorkflowBundle();
  for (const { file, history } of recordedHistories('histories-v4', 2)) {
    const workflowId = `sandbox-${path.basename(file, '.json')}`;
    await assert.doesNotReject(Worker.runReplayHistory({ workflowBundle, dataConverter: WITH_CODEC }, history, workflowId), file);
  }
});
