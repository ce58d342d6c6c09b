import { awsCallAttributes } from '../telemetry/aws-spans';
import { inClientSpan } from '../telemetry/spans';
import { randomBytes } from 'node:crypto';
import type { SandboxCredentials } from '../domain/client-config';
import { SandboxPlaneError } from '../domain/errors';
import { OPERATOR_HEADER, OPERATOR_PATH, operatorHeaders, operatorUrl, type OperatorAccess } from './operator-endpoint';
import { z } from 'zod';
import { QUIESCE_PATH, USAGE_PATH } from './moto-guard';
import { parseRecording, recordingHeader, replayRecording, reseedLine, type MintedIdentity, type Recording } from './moto-recording';

/**
 * A moto sandbox's credentials and state (DESIGN §12, §15): minting its key from a seed
 * with the recording started, taking the recording, and putting one back. Every call here
 * carries the container's operator token in a header, never in its URL, so no error here
 * can say it.
 */

/** The access of a moto container, which must have a token: without one its guard serves the plane nothing. */
function guarded(access: OperatorAccess): OperatorAccess & { token: string } {
  if (access.token === undefined) throw new Error('this moto container has no operator token: it cannot mint, reset or restore');
  return { endpoint: access.endpoint, token: access.token };
}

/** Empties every backend of a moto server (its own reset API), so a pooled server starts a sandbox clean. */
export async function resetMoto(access: OperatorAccess, signal: AbortSignal): Promise<void> {
  await motoApiPost(access, '/moto-api/reset', '', signal);
}

async function motoApiPost(access: OperatorAccess, path: string, body: string, signal: AbortSignal, contentType = 'text/plain'): Promise<void> {
  const url = operatorUrl(guarded(access), path);
  // text/plain by default: moto reads an upload's raw body, which a form content type would hide.
  const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': contentType, ...operatorHeaders(access) }, signal });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url} answered HTTP ${response.status}`);
}

const motoUsageSchema = z.object({ requests: z.number().int().nonnegative() });

/** The requests moto's guard served to the agent since its container started (DESIGN §19); never the plane's own. */
export async function motoRequestsServed(access: OperatorAccess, signal: AbortSignal): Promise<number> {
  const url = operatorUrl(guarded(access), USAGE_PATH);
  const response = await fetch(url, { headers: { accept: 'application/json', ...operatorHeaders(access) }, signal });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url} answered HTTP ${response.status}`);
  const parsed = motoUsageSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${url} answered no request count`);
  return parsed.data.requests;
}

/** Seeds moto's random; the seed goes in the body, never in a URL that a log line could show. */
function seedMoto(access: OperatorAccess, seed: string, signal: AbortSignal): Promise<void> {
  return motoApiPost(access, '/moto-api/seed', new URLSearchParams({ a: seed }).toString(), signal, 'application/x-www-form-urlencoded');
}

/** The recording as moto's recorder has it now. */
async function rawRecording(access: OperatorAccess, signal: AbortSignal): Promise<string> {
  const url = operatorUrl(guarded(access), '/moto-api/recorder/download-recording');
  const response = await fetch(url, { headers: operatorHeaders(access), signal });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url} answered HTTP ${response.status} to the recording's download`);
  return text;
}

/**
 * IAM's action prefix of each catalog service whose prefix is not its own name: a policy
 * allowing `stepfunctions:*` would allow nothing, since moto judges `states:<Action>`
 * (the signing name in the request's credential scope).
 */
const IAM_ACTION_PREFIX: Readonly<Record<string, string>> = { stepfunctions: 'states' };

/**
 * What the sandbox's own key may do with CloudFormation: read stacks, never change them.
 * moto's CloudFormation creates resources without checking IAM, so a key that could
 * create stacks could make any resource of any service, past the services granted and
 * past the plane's plans and approvals (DESIGN §14): changes go through `sandboxctl iac`.
 */
const CLOUDFORMATION_READ_ACTIONS = ['cloudformation:Describe*', 'cloudformation:Get*', 'cloudformation:List*', 'cloudformation:ValidateTemplate'];

/** The IAM policy a sandbox's user gets: every action of each granted service (CloudFormation: reading), nothing else. */
export function grantedServicesPolicy(services: readonly string[]): string {
  const actions = [...new Set(services.flatMap((service) => (service === 'cloudformation' ? CLOUDFORMATION_READ_ACTIONS : [`${IAM_ACTION_PREFIX[service] ?? service}:*`])))].sort();
  return JSON.stringify({ Version: '2012-10-17', Statement: [{ Sid: 'GrantedServices', Effect: 'Allow', Action: actions, Resource: '*' }] });
}

/** The inline policy holding a sandbox user's grant. */
const GRANT_POLICY_NAME = 'sandboxplane-granted-services';

/** moto reads only the credential scope of an operator call, to route it to IAM: nothing secret signs it. */
const OPERATOR_AUTHORIZATION = 'AWS4-HMAC-SHA256 Credential=sandboxplane-operator/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=none';

/** An IAM call as the plane's own, on the published endpoint: moto does not check it (moto-guard.ts). IAM's error codes in `tolerated` are no error. */
function operatorIamCall(access: OperatorAccess, action: string, params: Record<string, string>, signal: AbortSignal, tolerated: readonly string[] = []): Promise<string> {
  return inClientSpan(`aws IAM ${action}`, awsCallAttributes('IAM', action), () => sendIamCall(access, action, params, signal, tolerated));
}

async function sendIamCall(access: OperatorAccess, action: string, params: Record<string, string>, signal: AbortSignal, tolerated: readonly string[]): Promise<string> {
  const response = await fetch(access.endpoint, {
    method: 'POST',
    headers: { authorization: OPERATOR_AUTHORIZATION, 'content-type': 'application/x-www-form-urlencoded', ...operatorHeaders(guarded(access)) },
    body: new URLSearchParams({ Action: action, Version: '2010-05-08', ...params }).toString(),
    signal,
  });
  const text = await response.text();
  if (response.status !== 200) {
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? 'no error code';
    if (tolerated.includes(code)) return text;
    throw new Error(`IAM ${action} answered HTTP ${response.status} (${code})`);
  }
  return text;
}

function accessKeyOf(created: string): SandboxCredentials {
  const accessKeyId = /<AccessKeyId>([^<]+)<\/AccessKeyId>/.exec(created)?.[1];
  const secretAccessKey = /<SecretAccessKey>([^<]+)<\/SecretAccessKey>/.exec(created)?.[1];
  if (accessKeyId === undefined || secretAccessKey === undefined) throw new Error('IAM CreateAccessKey answered without an access key');
  return { accessKeyId, secretAccessKey };
}

function accessKeyIdsOf(listed: string): string[] {
  return [...listed.matchAll(/<AccessKeyId>([^<]+)<\/AccessKeyId>/g)].map((match) => match[1] ?? '');
}

/** 128 random bits for moto's random: a sandbox's key is drawn from it, so it must not be guessable. */
export function freshSeed(): string {
  return BigInt(`0x${randomBytes(16).toString('hex')}`).toString(10);
}

/**
 * Mints a sandbox's own credentials in its moto server: empties every backend (so a retry
 * or a pool's earlier tenant leaves nothing behind, IAM included), then mints them from a
 * fresh random seed (see {@link mintRecorded}). moto checks every later request's
 * signature and policy (it starts with INITIAL_NO_AUTH_ACTION_COUNT=0).
 */
export async function mintMotoCredentials(access: OperatorAccess, grant: { sandboxId: string; services: readonly string[] }, signal: AbortSignal): Promise<SandboxCredentials> {
  await resetMoto(access, signal);
  return mintRecorded(access, { seed: freshSeed(), user: grant.sandboxId, services: [...grant.services] }, signal);
}

/**
 * Mints `identity`'s credentials and starts the recording of the sandbox's state
 * (DESIGN §15): seeds moto's random (ids, keys), starts the recording afresh with a line
 * saying how the key was minted, and creates, as the plane, an IAM user named after the
 * sandbox, an inline policy allowing only the granted services, and an access key. The
 * minting itself is not recorded: a restore mints again from the same seed and gets the
 * same key.
 */
export async function mintRecorded(access: OperatorAccess, identity: MintedIdentity, signal: AbortSignal): Promise<SandboxCredentials> {
  await motoApiPost(access, '/moto-api/recorder/stop-recording', '', signal);
  await seedMoto(access, identity.seed, signal);
  await motoApiPost(access, '/moto-api/recorder/upload-recording', recordingHeader(identity), signal);
  const UserName = identity.user;
  await operatorIamCall(access, 'CreateUser', { UserName }, signal);
  await operatorIamCall(access, 'PutUserPolicy', { UserName, PolicyName: GRANT_POLICY_NAME, PolicyDocument: grantedServicesPolicy(identity.services) }, signal);
  const credentials = accessKeyOf(await operatorIamCall(access, 'CreateAccessKey', { UserName }, signal));
  await motoApiPost(access, '/moto-api/recorder/start-recording', '', signal);
  return credentials;
}

/** The recording so far (a snapshot's content); SNAPSHOT_TOO_LARGE once it passed what one holds. */
export async function captureMotoRecording(access: OperatorAccess, signal: AbortSignal): Promise<string> {
  const text = await rawRecording(access, signal);
  parseRecording(text);
  return text;
}

/**
 * Serves only the plane for `seconds` under `lease` (the guard's quiet, moto-guard.ts; sent
 * again, renews it), answering once the agent's requests moto already took are served; 0
 * ends that lease's quiet, never another's.
 */
export function quiesceMoto(access: OperatorAccess, quiet: { seconds: number; lease: string }, signal: AbortSignal): Promise<void> {
  return motoApiPost(access, QUIESCE_PATH, `${quiet.seconds} ${quiet.lease}`, signal);
}

/** How long a restore keeps everyone but the plane out without renewing its lease (it renews as it replays). */
const RESTORE_QUIET_SECONDS = 120;

/** How long putting back what a failed restore replaced may take: its own deadline, not the failed one's. */
const ROLLBACK_MS = 120_000;

/**
 * Puts a recorded state into a moto container (see {@link replace}), serving only the plane
 * meanwhile, under a lease of its own. A restore that fails puts back the state it
 * replaced, verbatim, and says whether that worked: a sandbox is never left with part of
 * a state without saying so.
 */
export async function restoreMotoRecording(
  access: OperatorAccess,
  text: string,
  target: RestoreInto,
  progress: (done: number) => void,
  signal: AbortSignal,
): Promise<SandboxCredentials | undefined> {
  const recording = parseRecording(text);
  const lease = randomBytes(12).toString('hex');
  const quiet = (seconds: number, until: AbortSignal) => quiesceMoto(access, { seconds, lease }, until);
  await quiet(RESTORE_QUIET_SECONDS, signal);
  const keepQuiet = () => quiet(RESTORE_QUIET_SECONDS, signal);
  try {
    const before = await rawRecording(access, signal).then(
      (raw) => parseRecording(raw),
      () => undefined,
    );
    try {
      return await replace(access, recording, target, { progress, keepQuiet }, signal);
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      const rollback = AbortSignal.timeout(ROLLBACK_MS);
      const undone =
        before === undefined
          ? 'its state before could not be read, so it may hold part of the snapshot'
          : await replace(
              access,
              before,
              { sandboxId: target.sandboxId, services: target.services, from: target.sandboxId, verbatim: true },
              { progress: () => undefined, keepQuiet: () => quiet(RESTORE_QUIET_SECONDS, rollback) },
              rollback,
            ).then(
              () => 'the sandbox was put back as it was',
              (again: unknown) => `putting it back as it was failed too (${String(again)}), so it may hold part of the snapshot`,
            );
      throw new SandboxPlaneError('PROVISION_FAILED', `the snapshot could not be put back: ${problem}; ${undone}`);
    }
  } finally {
    await quiet(0, AbortSignal.timeout(5_000)).catch(() => undefined);
  }
}

/** Where a restore goes: the sandbox, its grant, the sandbox the state was taken of, and the key it has now (if any). */
export interface RestoreInto {
  readonly sandboxId: string;
  readonly services: readonly string[];
  readonly from: string;
  readonly credentials?: SandboxCredentials;
  /** Put the state back as it was, keys included, and check nothing: a checkpoint, or what a failed restore replaced. */
  readonly verbatim?: boolean;
}

/**
 * Empties moto, mints the recording's own credentials from its seed, and replays its
 * requests (recorded again as they go, so a later snapshot holds them). Into another
 * sandbox than `from` (a fork), the sandbox then gets a key of its own. Into `from`
 * itself, its key must be in the state put back (a state taken before its emulator was
 * restarted holds an older key: it then gets a new one), unless the state goes back
 * verbatim. Returns the sandbox's credentials, or `undefined` when they are unchanged and
 * were not named.
 */
async function replace(
  access: OperatorAccess,
  recording: Recording,
  target: RestoreInto,
  replay: { progress: (done: number) => void; keepQuiet: () => Promise<void> },
  signal: AbortSignal,
): Promise<SandboxCredentials | undefined> {
  await resetMoto(access, signal);
  const minted = await mintRecorded(access, recording.identity, signal);
  await replayRecording(
    {
      endpoint: access.endpoint,
      operatorPath: OPERATOR_PATH,
      operatorHeader: OPERATOR_HEADER,
      operatorToken: guarded(access).token,
      reseed: (seed) => reseed(access, seed, signal),
      keepQuiet: replay.keepQuiet,
    },
    recording.steps,
    replay.progress,
    signal,
  );
  if (target.verbatim === true) return undefined;
  if (target.sandboxId !== target.from) return ownKey(access, target, signal);
  // A fork's own key was made by replayed calls, not by this mint: only a key the caller names can be checked.
  const expected = target.credentials ?? (recording.identity.user === target.sandboxId ? minted : undefined);
  if (expected === undefined) return undefined;
  const keys = accessKeyIdsOf(await operatorIamCall(access, 'ListAccessKeys', { UserName: target.sandboxId }, signal, ['NoSuchEntity']));
  return keys.includes(expected.accessKeyId) ? expected : ownKey(access, target, signal);
}

/**
 * Seeds moto's random afresh, with a line in the recording before what comes next, so that
 * a replay seeds it at the same point (and, replaying, writes the line again).
 */
async function reseed(access: OperatorAccess, seed: string, signal: AbortSignal): Promise<void> {
  await motoApiPost(access, '/moto-api/recorder/stop-recording', '', signal);
  const sofar = await rawRecording(access, signal);
  await motoApiPost(access, '/moto-api/recorder/upload-recording', `${sofar.endsWith('\n') || sofar === '' ? sofar : `${sofar}\n`}${reseedLine(seed)}`, signal);
  await seedMoto(access, seed, signal);
  await motoApiPost(access, '/moto-api/recorder/start-recording', '', signal);
}

/**
 * The sandbox's own identity in a state it did not make: the keys of `from` and of any
 * earlier user of its name stop working, and it gets its user, policy and a key, drawn
 * after a fresh seed (two forks of one snapshot hold different keys). The seed goes into
 * the recording, and the calls are recorded (as the plane's), so a snapshot of the sandbox
 * replays them and gets this key again.
 */
async function ownKey(access: OperatorAccess, target: RestoreInto, signal: AbortSignal): Promise<SandboxCredentials> {
  await reseed(access, freshSeed(), signal);
  for (const UserName of new Set([target.from, target.sandboxId])) {
    const listed = await operatorIamCall(access, 'ListAccessKeys', { UserName }, signal, ['NoSuchEntity']);
    for (const AccessKeyId of accessKeyIdsOf(listed)) await operatorIamCall(access, 'DeleteAccessKey', { UserName, AccessKeyId }, signal);
  }
  const UserName = target.sandboxId;
  await operatorIamCall(access, 'CreateUser', { UserName }, signal, ['EntityAlreadyExists']);
  await operatorIamCall(access, 'PutUserPolicy', { UserName, PolicyName: GRANT_POLICY_NAME, PolicyDocument: grantedServicesPolicy(target.services) }, signal);
  return accessKeyOf(await operatorIamCall(access, 'CreateAccessKey', { UserName }, signal));
}
