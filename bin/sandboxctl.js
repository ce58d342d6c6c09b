#!/usr/bin/env node
'use strict';
// The CLI ships compiled; `npm run build` (run by `npm run setup`) produces dist/.
const path = require('node:path');
const fs = require('node:fs');

const entry = path.join(__dirname, '..', 'dist', 'cli', 'main.js');
if (!fs.existsSync(entry)) {
  process.stderr.write('sandboxctl: dist/ is missing; run `npm run setup` (or `npm run build`) in ' + path.dirname(__dirname) + '\n');
  process.exit(1);
}
require(entry)
  .main(process.argv)
  // Exit explicitly: the Temporal SDK's native runtime can outlive the last worker.
  .then((code) => process.exit(code))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
