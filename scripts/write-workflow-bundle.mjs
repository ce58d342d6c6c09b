#!/usr/bin/env node
// The last step of `npm run build`: bundles the compiled workflow code once, into
// dist/workflow-bundle.js, so workers load it instead of running webpack at start
// (src/worker/workflow-code.ts says when they do not).
import workflowCode from '../dist/worker/workflow-code.js';
import logging from '../dist/logging/logger.js';

try {
  await workflowCode.writeBuiltWorkflowBundle(logging.createLogger('warn'));
} catch (err) {
  console.error(`build: bundling the workflow code failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
}
