/** The workflow thread's heap limit (worker/start-lifecycle-role.ts): sized by the cache, unless the operator sized the heap. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { heapLimitGiven, workflowThreadHeapMb } from '../../src/worker/start-lifecycle-role';

test('the limit grows with the workflow cache: 128 MB and 2 MB a cached run', () => {
  assert.equal(workflowThreadHeapMb(100), 328);
  assert.equal(workflowThreadHeapMb(2), 132);
});

test("an operator's own --max-old-space-size, in NODE_OPTIONS or on the command line, is kept", () => {
  assert.equal(heapLimitGiven([], undefined), false);
  assert.equal(heapLimitGiven([], '--enable-source-maps'), false);
  assert.equal(heapLimitGiven([], '--enable-source-maps --max-old-space-size=4096'), true);
  assert.equal(heapLimitGiven(['--max_old_space_size=2048'], undefined), true);
  assert.equal(heapLimitGiven(['--max-old-space-size', '2048'], ''), true);
  assert.equal(heapLimitGiven(['--max-old-space-sizes=1'], ''), false);
});
