#!/usr/bin/env node
// Writes src/adapters/generated/cloudformation-resource-spec.json: what the plan needs of
// the CloudFormation resource specification as `cdk diff` reads it (@aws-cdk/aws-service-spec,
// the version package.json pins): per resource type, whether it holds data and which
// top-level properties force a replacement when they change. Run it after bumping that
// package; test/unit/resource-spec.test.ts fails while the file and the package disagree.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const out = path.join(import.meta.dirname, '..', 'src', 'adapters', 'generated', 'cloudformation-resource-spec.json');

/** The table, from the specification's database: one entry per type, keys sorted. */
export function resourceSpecTable() {
  const { loadAwsServiceSpecSync } = require('@aws-cdk/aws-service-spec');
  const { version } = require('@aws-cdk/aws-service-spec/package.json');
  const db = loadAwsServiceSpecSync();
  const types = {};
  for (const resource of [...db.all('resource')].sort((a, b) => (a.cloudFormationType < b.cloudFormationType ? -1 : 1))) {
    const replaces = {};
    for (const name of Object.keys(resource.properties).sort()) {
      const causes = resource.properties[name].causesReplacement;
      if (causes === 'yes') replaces[name] = 'Always';
      else if (causes === 'maybe') replaces[name] = 'Conditionally';
    }
    types[resource.cloudFormationType] = { stateful: resource.isStateful === true, replaces };
  }
  return { source: `@aws-cdk/aws-service-spec@${version}`, types };
}

if (process.argv[1] === import.meta.filename) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(resourceSpecTable())}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), out)}\n`);
}
