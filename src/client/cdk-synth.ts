/**
 * Synthesizes a CDK app into a CloudFormation template on the caller's side (DESIGN §14,
 * "CDK"): the app's code runs here, with its own aws-cdk-lib, and only the template goes
 * to the plane. Workers never run an agent's code.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';
import { cdkBootstrapNeeds, type CdkBootstrapNeeds } from '../domain/iac/cdk-bootstrap';
import { describeIssues, parseOrThrow } from '../domain/validation';

/** One stack of a synthesized CDK app: what the plane plans and applies. */
export interface SynthesizedStack {
  /** The CloudFormation stack name `cdk deploy` would use (the stack's `stackName`, else its id). */
  stackName: string;
  /** The synthesized CloudFormation template, parsed. */
  template: Record<string, unknown>;
  /** What must exist in the target account before the template deploys (the CDK bootstrap version parameter). */
  bootstrap: CdkBootstrapNeeds;
}

/** Options of {@link synthesizeCdkApp}. */
export interface SynthesizeCdkAppOptions {
  /** Which stack to return when the app has several: its id, display name (as `cdk ls` prints it) or stack name. */
  stack?: string;
  /** How long `cdk synth` may run before it is killed; default 5 minutes. */
  timeoutMs?: number;
  /** Aborting kills `cdk synth` and rejects with the signal's reason. */
  signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000;
const OUTPUT_TAIL_LINES = 40;
/** Enough for the tail of any failure; a chatty app cannot grow this process's memory without bound. */
const OUTPUT_KEEP_BYTES = 256 * 1024;
const OUTPUT_CLOSE_GRACE_MS = 2_000;

const optionsSchema = z
  .object({
    stack: z.string().min(1, 'must name a stack').optional(),
    timeoutMs: z.number().int('must be a whole number of milliseconds').positive('must be positive').optional(),
    signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
  })
  .strict();

/**
 * Runs `cdk synth` on the CDK app in `appDir` (a folder with a `cdk.json`) and returns the
 * template of its one stack, or of `options.stack` when it has several.
 *
 * It runs the app's own CDK CLI (`node_modules/.bin/cdk` in the app) when there is one,
 * else the one this package depends on, with lookups off and no AWS credentials, so
 * nothing reaches a cloud: an app that needs context lookups must have them cached in its
 * `cdk.context.json`. Apps with file or Docker image assets are refused, as the plane
 * applies templates only.
 *
 * @throws {SandboxPlaneError} INVALID_INPUT when the folder is no CDK app, the app fails
 *   to synthesize or takes longer than `timeoutMs`, the stack is ambiguous or unknown, or
 *   it has assets.
 */
export async function synthesizeCdkApp(appDir: string, options: SynthesizeCdkAppOptions = {}): Promise<SynthesizedStack> {
  const { stack, timeoutMs = DEFAULT_TIMEOUT_MS, signal } = parseOrThrow(optionsSchema, options, 'CDK synth options');
  const app = checkAppDir(appDir);
  signal?.throwIfAborted();
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-cdk-'));
  try {
    await runCdkSynth(app, outDir, { timeoutMs, signal });
    return readStack(outDir, stack);
  } finally {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
}

function checkAppDir(appDir: string): string {
  if (typeof appDir !== 'string' || appDir === '') throw new SandboxPlaneError('INVALID_INPUT', 'appDir must name the folder of a CDK app (the one with its cdk.json)');
  const app = path.resolve(appDir);
  const stat = fs.statSync(app, { throwIfNoEntry: false });
  if (stat === undefined) throw new SandboxPlaneError('INVALID_INPUT', `${app} does not exist: name the folder of a CDK app (the one with its cdk.json)`, { details: { appDir: app } });
  if (!stat.isDirectory()) throw new SandboxPlaneError('INVALID_INPUT', `${app} is not a folder: name the folder of a CDK app (the one with its cdk.json)`, { details: { appDir: app } });
  if (!fs.existsSync(path.join(app, 'cdk.json'))) {
    throw new SandboxPlaneError('INVALID_INPUT', `${app} has no cdk.json: name the CDK app's own folder (where \`cdk synth\` works), or create one with \`cdk init app\``, {
      details: { appDir: app },
    });
  }
  return app;
}

/** The app's own CLI when it has one (its version matches its aws-cdk-lib), else ours. */
function cdkCommand(app: string): { command: string; prefix: string[] } {
  const own = path.join(app, 'node_modules', '.bin', 'cdk');
  if (fs.existsSync(own)) return { command: own, prefix: [] };
  const packageJson = require.resolve('aws-cdk/package.json');
  const { bin } = JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { bin: { cdk: string } };
  return { command: process.execPath, prefix: [path.join(path.dirname(packageJson), bin.cdk)] };
}

/** Variables that would make the CLI pick up AWS credentials are dropped; these are kept. */
const AWS_VARIABLES_KEPT = new Set(['AWS_REGION', 'AWS_DEFAULT_REGION']);

/**
 * The caller's environment without AWS credentials or profiles: given any, the CLI asks
 * STS for the default account before every synth (a call out to a real cloud, which hangs
 * where the network is closed). Without them it skips that, and the app stays
 * environment-agnostic. The region is the caller's AWS_REGION or AWS_DEFAULT_REGION, else
 * the CLI's default us-east-1 (the sandboxes' region); it costs no call.
 */
export function cdkSynthEnvironment(outDir: string, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const kept = Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('AWS_') || AWS_VARIABLES_KEPT.has(name)));
  return {
    ...kept,
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    CDK_DISABLE_VERSION_CHECK: '1',
    AWS_EC2_METADATA_DISABLED: 'true',
    // Files that do not exist: ~/.aws would otherwise give the CLI a profile's credentials.
    AWS_SHARED_CREDENTIALS_FILE: path.join(outDir, 'no-aws-credentials'),
    AWS_CONFIG_FILE: path.join(outDir, 'no-aws-config'),
  };
}

async function runCdkSynth(app: string, outDir: string, options: { timeoutMs: number; signal: AbortSignal | undefined }): Promise<void> {
  const { command, prefix } = cdkCommand(app);
  const assemblyDir = path.join(outDir, 'cdk.out');
  const args = [
    ...prefix,
    'synth',
    '--quiet',
    '--no-notices',
    '--version-reporting',
    'false',
    '--asset-metadata',
    'false',
    '--path-metadata',
    'false',
    '--no-lookups',
    '--output',
    assemblyDir,
  ];
  // Its own process group, so a timeout also kills the app the CLI runs as its child.
  const child = spawn(command, args, { cwd: app, env: cdkSynthEnvironment(outDir), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const output = new OutputTail();
  child.stdout.on('data', (chunk: Buffer) => output.add(chunk));
  child.stderr.on('data', (chunk: Buffer) => output.add(chunk));

  let stoppedBy: 'timeout' | 'abort' | undefined;
  const stop = (reason: 'timeout' | 'abort') => {
    stoppedBy ??= reason;
    killGroup(child.pid);
  };
  const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
  const onAbort = () => stop('abort');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let exit: Exit;
  try {
    exit = await exitOf(child);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }

  if (stoppedBy === 'abort') throw options.signal?.reason;
  const commandLine = ['cdk', ...args.slice(prefix.length)].join(' ');
  if (stoppedBy === 'timeout') {
    throw new SandboxPlaneError('INVALID_INPUT', `the CDK app did not synthesize within ${options.timeoutMs} ms and was stopped; its last output:\n${output.tail()}`, {
      hint: 'Make the app synthesize faster, or pass a longer timeout.',
      details: { appDir: app, command: commandLine, timeoutMs: options.timeoutMs },
    });
  }
  if (exit.error !== undefined) {
    throw new SandboxPlaneError('INVALID_INPUT', `could not run the CDK CLI (${command}): ${exit.error.message}`, { details: { appDir: app, command: commandLine }, cause: exit.error });
  }
  if (exit.code !== 0) {
    const how = exit.code === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited with ${exit.code}`;
    throw new SandboxPlaneError('INVALID_INPUT', `the CDK app failed to synthesize (cdk synth ${how}):\n${output.tail()}`, {
      hint: 'Fix the app until `cdk synth` succeeds in its folder; lookups are off, so context must be cached in cdk.context.json.',
      details: { appDir: app, command: commandLine, exitCode: exit.code },
    });
  }
}

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly error?: Error;
}

/**
 * The CLI's exit, once its output is read: its pipes close soon after, unless something it
 * started (a bundler, a watcher) still holds them, which is then killed rather than waited for.
 */
async function exitOf(child: ChildProcessByStdio<null, Readable, Readable>): Promise<Exit> {
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const exit = await new Promise<Exit>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let grace: NodeJS.Timeout | undefined;
  const lingering = await Promise.race([closed.then(() => false), new Promise<boolean>((resolve) => (grace = setTimeout(() => resolve(true), OUTPUT_CLOSE_GRACE_MS)))]);
  clearTimeout(grace);
  if (lingering) {
    killGroup(child.pid);
    child.stdout.destroy();
    child.stderr.destroy();
  }
  return exit;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (err) {
    // Already gone: the group exited between the decision and the kill.
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** The last bytes of the CLI's stdout and stderr, interleaved as they arrived. */
class OutputTail {
  private chunks: Buffer[] = [];
  private bytes = 0;

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes > OUTPUT_KEEP_BYTES && this.chunks.length > 1) this.bytes -= this.chunks.shift()?.length ?? 0;
  }

  tail(): string {
    const lines = Buffer.concat(this.chunks).toString('utf8').split('\n');
    const kept = lines.filter((line, index) => line.trim() !== '' || index < lines.length - 1).slice(-OUTPUT_TAIL_LINES);
    return kept.length === 0 ? '(no output)' : kept.join('\n');
  }
}

const artifactSchema = z.object({
  type: z.string(),
  displayName: z.string().optional(),
  properties: z.record(z.unknown()).optional(),
  dependencies: z.array(z.string()).optional(),
});
const manifestSchema = z.object({ artifacts: z.record(artifactSchema).default({}) });
const stackPropertiesSchema = z.object({ templateFile: z.string().min(1), stackName: z.string().min(1).optional() });
const assetManifestPropertiesSchema = z.object({ file: z.string().min(1) });
const nestedAssemblyPropertiesSchema = z.object({ directoryName: z.string(), displayName: z.string().optional() });
const assetsSchema = z.object({
  files: z.record(z.object({ displayName: z.string().optional(), source: z.object({ path: z.string().optional() }).passthrough() })).default({}),
  dockerImages: z.record(z.object({ displayName: z.string().optional(), source: z.object({ directory: z.string().optional() }).passthrough() })).default({}),
});
const templateSchema = z.record(z.unknown());

type Artifact = z.infer<typeof artifactSchema>;

interface StackArtifact {
  readonly id: string;
  readonly displayName: string;
  readonly stackName: string;
  readonly templateFile: string;
  readonly dependencies: readonly string[];
}

/** Reads the cloud assembly `cdk synth` wrote (its schema: aws-cdk-lib's cloud-assembly-schema). */
function readStack(outDir: string, wanted: string | undefined): SynthesizedStack {
  const assemblyDir = path.join(outDir, 'cdk.out');
  const manifest = readJson(path.join(assemblyDir, 'manifest.json'), manifestSchema, 'the cloud assembly manifest');
  const artifacts = Object.entries(manifest.artifacts);
  const stacks = artifacts.filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack').map(([id, artifact]) => stackArtifact(id, artifact));
  const stages = artifacts
    .filter(([, artifact]) => artifact.type === 'cdk:cloud-assembly')
    .map(([id, artifact]) => nestedAssemblyPropertiesSchema.safeParse(artifact.properties).data?.displayName ?? artifact.displayName ?? id);
  const stagesNote = stages.length === 0 ? '' : `; stacks inside stages (${stages.join(', ')}) are not supported: define the stack at the app's top level`;
  const chosen = chooseStack(stacks, wanted, stagesNote);
  refuseAssets(assemblyDir, chosen, manifest.artifacts);
  const template = readJson(path.join(assemblyDir, chosen.templateFile), templateSchema, `the template of stack ${chosen.displayName}`);
  return { stackName: chosen.stackName, template, bootstrap: cdkBootstrapNeeds(template) };
}

function chooseStack(stacks: readonly StackArtifact[], wanted: string | undefined, stagesNote: string): StackArtifact {
  const names = stacks.map((candidate) => candidate.displayName);
  const [first, ...others] = stacks;
  if (first === undefined) throw new SandboxPlaneError('INVALID_INPUT', `the CDK app defines no stack at its top level${stagesNote}`);
  if (wanted === undefined) {
    if (others.length === 0) return first;
    throw new SandboxPlaneError('INVALID_INPUT', `the CDK app has ${stacks.length} stacks (${names.join(', ')}): pass --stack NAME to choose one`, { details: { stacks: names } });
  }
  const chosen = stacks.find((candidate) => [candidate.id, candidate.displayName, candidate.stackName].includes(wanted));
  if (chosen !== undefined) return chosen;
  throw new SandboxPlaneError('INVALID_INPUT', `the CDK app has no stack ${wanted}; its stacks: ${names.join(', ')}${stagesNote}`, { details: { stack: wanted, stacks: names } });
}

function stackArtifact(id: string, artifact: Artifact): StackArtifact {
  const parsed = stackPropertiesSchema.safeParse(artifact.properties);
  if (!parsed.success) throw unreadable(`stack ${id} in the cloud assembly manifest`, parsed.error.issues);
  return {
    id,
    displayName: artifact.displayName ?? id,
    stackName: parsed.data.stackName ?? id,
    templateFile: parsed.data.templateFile,
    dependencies: artifact.dependencies ?? [],
  };
}

/**
 * Refuses a stack with file or Docker image assets: the plane cannot publish them, and a
 * template applied without them would half work. The default synthesizer lists the template
 * itself as a file asset (to upload it to the bootstrap bucket); that one is not counted.
 */
function refuseAssets(assemblyDir: string, stack: StackArtifact, artifacts: Readonly<Record<string, Artifact>>): void {
  const files: string[] = [];
  const images: string[] = [];
  for (const dependency of stack.dependencies) {
    const artifact = artifacts[dependency];
    if (artifact?.type !== 'cdk:asset-manifest') continue;
    const properties = assetManifestPropertiesSchema.safeParse(artifact.properties);
    if (!properties.success) throw unreadable(`asset manifest ${dependency} in the cloud assembly manifest`, properties.error.issues);
    const assets = readJson(path.join(assemblyDir, properties.data.file), assetsSchema, `the asset manifest of stack ${stack.displayName}`);
    for (const [id, asset] of Object.entries(assets.files)) {
      if (asset.source.path !== stack.templateFile) files.push(assetName(id, asset.displayName, asset.source.path));
    }
    for (const [id, image] of Object.entries(assets.dockerImages)) images.push(assetName(id, image.displayName, image.source.directory));
  }
  if (files.length === 0 && images.length === 0) return;
  const listed = (names: readonly string[]) => (names.length === 0 ? '' : ` (${names.join(', ')})`);
  throw new SandboxPlaneError(
    'INVALID_INPUT',
    `the stack ${stack.displayName} has ${files.length} file asset(s)${listed(files)} and ${images.length} image asset(s)${listed(images)}: the sandbox plane applies templates only; ` +
      'publishing assets is not supported — remove them (e.g. inline Lambda code) or deploy assets another way',
    { hint: 'Remove the assets from the stack (inline code, or reference artifacts that already exist), then synthesize again.', details: { stack: stack.displayName, files, images } },
  );
}

/** The construct path the asset was made at (`MyFunction/Code`); its staged copy's name says nothing to the app's author. */
function assetName(id: string, displayName: string | undefined, source: string | undefined): string {
  return displayName ?? source ?? id;
}

function readJson<S extends z.ZodTypeAny>(file: string, schema: S, what: string): z.output<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SandboxPlaneError('INVALID_INPUT', `could not read ${what} (${path.basename(file)}): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw unreadable(what, parsed.error.issues);
  return parsed.data;
}

/** The assembly came from the app's own CLI, whose version may write a shape this reader does not know. */
function unreadable(what: string, issues: readonly z.ZodIssue[]): SandboxPlaneError {
  return new SandboxPlaneError('INVALID_INPUT', `${what} is not in a shape this plane reads: ${describeIssues(issues)}`, {
    hint: 'Use an aws-cdk CLI of version 2 in the app (or none, to use the one this package ships).',
  });
}
