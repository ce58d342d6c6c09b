/**
 * The SDK as a consumer sees it: `cloud-sandbox-plane` resolved through node_modules
 * (a symlink to this checkout), by require, by import and by the TypeScript compiler,
 * with nothing but the package's `exports` to go on.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../harness/cli';

const run = promisify(execFile);
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** The stamp scripts/setup.sh leaves after compiling dist/; sources newer than it mean dist/ is stale. */
const BUILD_STAMP = path.join(REPO_ROOT, 'dist', '.build-stamp');

function newestMtimeMs(entry: string): number {
  const stat = fs.statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...fs.readdirSync(entry).map((name) => newestMtimeMs(path.join(entry, name))));
}

/** Compiles dist/ the way `npm run build` does when it is missing or older than the sources, as setup.sh would. */
async function ensureBuilt(): Promise<void> {
  const built = fs.existsSync(BUILD_STAMP) ? fs.statSync(BUILD_STAMP).mtimeMs : 0;
  const inputs = ['src', 'tsconfig.json', 'package-lock.json'].map((entry) => newestMtimeMs(path.join(REPO_ROOT, entry)));
  if (fs.existsSync(path.join(REPO_ROOT, 'dist', 'index.js')) && Math.max(...inputs) <= built) return;
  await run(process.execPath, [TSC, '-p', path.join(REPO_ROOT, 'tsconfig.json')], { cwd: REPO_ROOT }).catch((err: { stdout?: string }) => {
    throw new Error(`npm run build fails, so there is no package to test:\n${err.stdout ?? String(err)}`);
  });
  fs.writeFileSync(BUILD_STAMP, '');
}

describe("the package entry 'cloud-sandbox-plane'", () => {
  const consumer = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-consumer-'));

  before(async () => {
    await ensureBuilt();
    fs.mkdirSync(path.join(consumer, 'node_modules'));
    fs.symlinkSync(REPO_ROOT, path.join(consumer, 'node_modules', 'cloud-sandbox-plane'), 'junction');
  });

  after(() => fs.rmSync(consumer, { recursive: true, force: true }));

  /** Runs `node` in the consumer's folder and parses the one JSON line it prints. */
  async function nodeIn(args: readonly string[]): Promise<Record<string, unknown>> {
    const { stdout } = await run(process.execPath, args, { cwd: consumer });
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  test('require() gives the SDK, its errors, schema and states; deep imports are closed', async () => {
    const seen = await nodeIn([
      '-e',
      `const m = require('cloud-sandbox-plane');
       let deep = 'resolved';
       try { require('cloud-sandbox-plane/dist/client/sandbox-client'); } catch (err) { deep = err.code; }
       const error = new m.SandboxPlaneError('NOT_FOUND', 'no such sandbox');
       console.log(JSON.stringify({
         SandboxClient: typeof m.SandboxClient,
         isSandboxPlaneError: m.isSandboxPlaneError(error),
         exitCode: error.exitCode,
         notFound: m.ERROR_CODES.NOT_FOUND.category,
         parsed: m.sandboxRequestSchema.parse({ principal: 'agent-7', services: ['sqs', 's3'] }).services,
         ready: m.SANDBOX_STATES.includes('READY'),
         destroyedIsTerminal: m.TERMINAL_STATES.has('DESTROYED'),
         generatedId: typeof m.generateSandboxId(),
         eventKind: m.EVENT_KINDS.includes('sandbox.destroyed') && m.EVENT_REASONS.includes('ttl'),
         version: require('cloud-sandbox-plane/package.json').version,
         deep,
       }));`,
    ]);
    assert.deepEqual(seen, {
      SandboxClient: 'function',
      isSandboxPlaneError: true,
      exitCode: 4,
      notFound: 'not_found',
      parsed: ['s3', 'sqs'],
      ready: true,
      destroyedIsTerminal: true,
      generatedId: 'string',
      eventKind: true,
      version: (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version,
      deep: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    });
  });

  test('an ES module imports the SDK by name', async () => {
    const file = path.join(consumer, 'consumer.mjs');
    fs.writeFileSync(
      file,
      `import { SandboxClient, SandboxPlaneError, withTimeLeft } from 'cloud-sandbox-plane';
       console.log(JSON.stringify({ SandboxClient: typeof SandboxClient, SandboxPlaneError: typeof SandboxPlaneError, withTimeLeft: typeof withTimeLeft }));`,
    );
    assert.deepEqual(await nodeIn([file]), { SandboxClient: 'function', SandboxPlaneError: 'function', withTimeLeft: 'function' });
  });

  test('TypeScript (node16 resolution) type-checks a consumer, from CommonJS and from ESM', async () => {
    const source = `import { SandboxClient, SandboxPlaneError, type CreateOptions, type EventPage, type PlaneEvent, type SandboxRequestInput, type SandboxStatus } from 'cloud-sandbox-plane';

export async function endpointOf(sandboxes: SandboxClient): Promise<string | null> {
  const request: SandboxRequestInput = { principal: 'agent-7', services: ['s3'] };
  const options: CreateOptions = { wait: 'ready', timeoutMs: 60_000 };
  const status: SandboxStatus = await sandboxes.create(request, options);
  return status.clientConfig?.endpoint ?? null;
}

export async function reasonsOf(sandboxes: SandboxClient, signal: AbortSignal): Promise<string[]> {
  const page: EventPage = await sandboxes.events({ sandboxId: 'sbx-1', since: '1h', limit: 10 });
  const reasons = page.events.map((event: PlaneEvent) => event.reason);
  for await (const event of sandboxes.followEvents({ after: page.next, signal })) reasons.push(event.reason);
  return reasons;
}

export function codeOf(err: unknown): string | undefined {
  return err instanceof SandboxPlaneError ? err.code : undefined;
}

// Proof the types are real, not any: each of these must be an error.
// @ts-expect-error not a state
export const state: SandboxStatus['state'] = 'NOPE';
// @ts-expect-error services are required
export const missing: SandboxRequestInput = { principal: 'agent-7' };
// @ts-expect-error not a reason
export const reason: PlaneEvent['reason'] = 'whim';
`;
    fs.writeFileSync(path.join(consumer, 'consumer.ts'), source);
    fs.writeFileSync(path.join(consumer, 'consumer.mts'), source);
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'node16', moduleResolution: 'node16', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ['consumer.ts', 'consumer.mts'],
      }),
    );
    const result = await run(process.execPath, [TSC, '-p', path.join(consumer, 'tsconfig.json')], { cwd: consumer }).then(
      () => ({ ok: true, output: '' }),
      (err: { stdout?: string }) => ({ ok: false, output: err.stdout ?? String(err) }),
    );
    assert.ok(result.ok, result.output);
  });
});
