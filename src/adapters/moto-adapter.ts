import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { clientConfigFor, type SandboxCredentials } from '../domain/client-config';
import { SandboxPlaneError } from '../domain/errors';
import { SERVICE_CATALOGS } from '../domain/service-catalog';
import type { ContainerBroker } from '../docker';
import { listThroughAwsApis } from './aws-resource-listers';
import type { HealthReport } from './cloud-emulator-adapter';
import { ContainerEmulatorAdapter, type OperatorAccess } from './container-emulator';
import { fetchJson } from './health-gate';
import { parseRecording, RECORDED_AS_HEADER, recordingHeader, replayRecording, type MintedIdentity } from './moto-recording';

export const MOTO_PORT = 5000;
const REGION = 'us-east-1';
const MIB = 1024 * 1024;

/** moto's own inventory endpoint: a JSON object keyed by service. */
const motoDataSchema = z.record(z.string(), z.unknown());

/** Healthy only on HTTP 200 with a JSON body from moto's own API. */
export async function motoHealthProbe(endpoint: string, signal: AbortSignal): Promise<HealthReport> {
  const answer = await fetchJson(`${endpoint}/moto-api/data.json`, signal);
  if (!answer.ok) return { healthy: false, registeredServices: [], readyServices: [], detail: answer.reason };
  const parsed = motoDataSchema.safeParse(answer.body);
  if (!parsed.success) {
    return { healthy: false, registeredServices: [], readyServices: [], detail: 'moto-api/data.json is not a JSON object' };
  }
  const catalog = SERVICE_CATALOGS.moto;
  const registeredServices = Object.keys(catalog).sort();
  return {
    healthy: true,
    registeredServices,
    readyServices: registeredServices.filter((service) => catalog[service]?.fidelity !== 'UNAVAILABLE'),
    detail: 'moto server answers',
  };
}

/** Empties every backend of a moto server (its own reset API), so a pooled server starts a sandbox clean. */
export async function resetMoto(endpoint: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST', signal });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${endpoint}/moto-api/reset answered HTTP ${response.status}`);
}

/** The user scripts/build-moto-image.sh creates for the server: the container never runs as root. */
export const MOTO_UID = 10001;

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

/**
 * The IAM calls minting takes; moto lets exactly this many through unchecked after
 * `/moto-api/reset-auth`, then checks every request again.
 */
const MINTING_ACTIONS = ['CreateUser', 'PutUserPolicy', 'CreateAccessKey'] as const;

/** The inline policy holding a sandbox user's grant. */
const GRANT_POLICY_NAME = 'sandboxplane-granted-services';

/**
 * Inside the no-auth window moto neither looks the key up nor checks the signature; it
 * reads only the credential scope, to route the request to IAM. So nothing secret signs these.
 */
const NO_AUTH_WINDOW_AUTHORIZATION = 'AWS4-HMAC-SHA256 Credential=sandboxplane-minting/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=none';

async function motoApiPost(endpoint: string, path: string, body: string, signal: AbortSignal): Promise<void> {
  // text/plain: moto reads reset-auth's count from the raw body, which a form content type would hide.
  const response = await fetch(`${endpoint}${path}`, { method: 'POST', body, headers: { 'content-type': 'text/plain' }, signal });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${endpoint}${path} answered HTTP ${response.status}`);
}

function iamCall(endpoint: string, action: (typeof MINTING_ACTIONS)[number], params: Record<string, string>, signal: AbortSignal): Promise<string> {
  return signedIamCall(endpoint, {}, action, params, signal);
}

/** An IAM call as the plane's own, on the published endpoint: moto does not check it (see the guard script). */
function operatorIamCall(access: OperatorAccess, action: string, params: Record<string, string>, signal: AbortSignal): Promise<string> {
  return signedIamCall(access.endpoint, { [OPERATOR_HEADER]: access.token }, action, params, signal);
}

async function signedIamCall(endpoint: string, extraHeaders: Record<string, string>, action: string, params: Record<string, string>, signal: AbortSignal): Promise<string> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { authorization: NO_AUTH_WINDOW_AUTHORIZATION, 'content-type': 'application/x-www-form-urlencoded', ...extraHeaders },
    body: new URLSearchParams({ Action: action, Version: '2010-05-08', ...params }).toString(),
    signal,
  });
  const text = await response.text();
  if (response.status !== 200) {
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? 'no error code';
    throw new Error(`IAM ${action} answered HTTP ${response.status} (${code})`);
  }
  return text;
}

/**
 * Mints a sandbox's own credentials in its moto server: empties every backend (so a retry
 * or a pool's earlier tenant leaves nothing behind, IAM included), then mints them from a
 * fresh random seed (see {@link mintRecorded}). moto checks every later request's
 * signature and policy (it starts with INITIAL_NO_AUTH_ACTION_COUNT=0).
 */
export async function mintMotoCredentials(endpoint: string, grant: { sandboxId: string; services: readonly string[] }, signal: AbortSignal): Promise<SandboxCredentials> {
  await resetMoto(endpoint, signal);
  return mintRecorded(endpoint, { seed: randomInt(0, 2 ** 31 - 1), user: grant.sandboxId, services: [...grant.services] }, signal);
}

/**
 * Mints `identity`'s credentials and starts the recording of the sandbox's state
 * (DESIGN §15): seeds moto's random (ids, keys), starts the recording afresh with a line
 * saying how the key was minted, opens moto's no-auth window for exactly the minting calls,
 * and creates an IAM user named after the sandbox, an inline policy allowing only the
 * granted services, and an access key. The minting itself is not recorded: a restore mints
 * again from the same seed and gets the same key. `endpoint` is the operator endpoint.
 */
export async function mintRecorded(endpoint: string, identity: MintedIdentity, signal: AbortSignal): Promise<SandboxCredentials> {
  await motoApiPost(endpoint, '/moto-api/recorder/stop-recording', '', signal);
  await motoApiPost(endpoint, `/moto-api/seed?a=${identity.seed}`, '', signal);
  await motoApiPost(endpoint, '/moto-api/recorder/upload-recording', recordingHeader(identity), signal);
  await motoApiPost(endpoint, '/moto-api/reset-auth', String(MINTING_ACTIONS.length), signal);
  const UserName = identity.user;
  await iamCall(endpoint, 'CreateUser', { UserName }, signal);
  await iamCall(endpoint, 'PutUserPolicy', { UserName, PolicyName: GRANT_POLICY_NAME, PolicyDocument: grantedServicesPolicy(identity.services) }, signal);
  const credentials = accessKeyOf(await iamCall(endpoint, 'CreateAccessKey', { UserName }, signal));
  await motoApiPost(endpoint, '/moto-api/recorder/start-recording', '', signal);
  return credentials;
}

function accessKeyOf(created: string): SandboxCredentials {
  const accessKeyId = /<AccessKeyId>([^<]+)<\/AccessKeyId>/.exec(created)?.[1];
  const secretAccessKey = /<SecretAccessKey>([^<]+)<\/SecretAccessKey>/.exec(created)?.[1];
  if (accessKeyId === undefined || secretAccessKey === undefined) throw new Error('IAM CreateAccessKey answered without an access key');
  return { accessKeyId, secretAccessKey };
}

/** The recording so far (the snapshot's content): moto's own download, on the operator path only. */
export async function downloadMotoRecording(operatorEndpoint: string, signal: AbortSignal): Promise<string> {
  const response = await fetch(`${operatorEndpoint}/moto-api/recorder/download-recording`, { signal });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${operatorEndpoint.replace(/\/_sandboxplane\/.*/, '')} answered HTTP ${response.status} to the recording's download`);
  return text;
}

/**
 * Puts a recorded state into a moto container: empties it, mints the recording's own
 * credentials from its seed, and replays its requests (recorded again as they go, so a
 * later snapshot holds them). When the state goes to another sandbox than `from` (a fork),
 * `from`'s keys are deleted and the sandbox gets a user and key of its own, made through the
 * operator path so that a snapshot of the fork replays them too. Returns the sandbox's
 * credentials: for a restore into `from` itself, the same ones it had (checked to be
 * there), or `undefined` when they are not named and were not minted by this recording.
 */
export async function restoreMotoRecording(
  access: OperatorAccess,
  text: string,
  target: { sandboxId: string; services: readonly string[]; from: string; credentials?: SandboxCredentials },
  progress: (done: number) => void,
  signal: AbortSignal,
): Promise<SandboxCredentials | undefined> {
  const recording = parseRecording(text);
  await resetMoto(access.operatorEndpoint, signal);
  const minted = await mintRecorded(access.operatorEndpoint, recording.identity, signal);
  await replayRecording({ endpoint: access.endpoint, operatorHeader: OPERATOR_HEADER, operatorToken: access.token }, recording.requests, progress, signal);
  if (target.sandboxId !== target.from) return handOver(access, target.from, target, signal);
  // A fork's own key was made by replayed calls, not by this mint: only a key the caller names can be checked.
  const expected = target.credentials ?? (recording.identity.user === target.sandboxId ? minted : undefined);
  if (expected === undefined) return undefined;
  const keys = await operatorIamCall(access, 'ListAccessKeys', { UserName: target.sandboxId }, signal);
  if (!keys.includes(`<AccessKeyId>${expected.accessKeyId}</AccessKeyId>`)) {
    throw new Error(`the replayed state does not hold sandbox ${target.sandboxId}'s access key ${expected.accessKeyId}: its requests did not replay as they were recorded`);
  }
  return expected;
}

/** A fork's own identity: `from`'s keys stop working, and the fork's user, policy and key are made. */
async function handOver(access: OperatorAccess, from: string, target: { sandboxId: string; services: readonly string[] }, signal: AbortSignal): Promise<SandboxCredentials> {
  const listed = await operatorIamCall(access, 'ListAccessKeys', { UserName: from }, signal);
  for (const [, AccessKeyId] of listed.matchAll(/<AccessKeyId>([^<]+)<\/AccessKeyId>/g)) {
    await operatorIamCall(access, 'DeleteAccessKey', { UserName: from, AccessKeyId: AccessKeyId ?? '' }, signal);
  }
  const UserName = target.sandboxId;
  await operatorIamCall(access, 'CreateUser', { UserName }, signal);
  await operatorIamCall(access, 'PutUserPolicy', { UserName, PolicyName: GRANT_POLICY_NAME, PolicyDocument: grantedServicesPolicy(target.services) }, signal);
  return accessKeyOf(await operatorIamCall(access, 'CreateAccessKey', { UserName }, signal));
}

/** The environment variable that gives a moto container its operator token. */
const OPERATOR_TOKEN_ENV = 'SANDBOXPLANE_MOTO_API_TOKEN';

/** The header that makes an AWS call the plane's own (IaC plans, applies and checks): its value is the operator token. */
export const OPERATOR_HEADER = 'x-sandboxplane-operator';

/**
 * moto's server behind a guard: moto's own API (`/moto-api/...`: reset, reset-auth,
 * data.json, which lists every access key with its secret) is served only under
 * `/_sandboxplane/<token>` and answered 403 anywhere else, so whoever reaches the port
 * cannot turn authentication off, wipe the sandbox or read its keys. An AWS call that
 * carries the token in {@link OPERATOR_HEADER} skips moto's IAM checks: the plane applies
 * an agent's approved template through it, whatever the sandbox's own key may do, and a
 * wrong token is 403. Everything else goes to moto unchanged; moto's own `main` runs the
 * server (signals, request handler).
 *
 * moto's recorder (DESIGN §15: a snapshot is its recording) writes to /dev/shm, the one
 * writable place of a read-only container, counted in its memory. It records AWS calls
 * only: moto's own API (health probes, resets) is the plane's, never the sandbox's state.
 * A call made with the token is recorded with {@link RECORDED_AS_HEADER} so that a replay
 * sends the token again; the guard strips that header from every other call.
 */
/** How WSGI names {@link RECORDED_AS_HEADER} in a request's environ. */
const RECORDED_AS_ENVIRON = `HTTP_${RECORDED_AS_HEADER.toUpperCase().replaceAll('-', '_')}`;

/** Where moto's recorder keeps the recording: tmpfs, inside the container's memory limit. */
const RECORDING_PATH = '/dev/shm/sandboxplane-recording.jsonl';

const MOTO_GUARD_SCRIPT = [
  'import contextvars, hmac, os',
  'from urllib.parse import unquote',
  'import moto.server as server',
  'from moto.core import authorization',
  `token = os.environ.pop("${OPERATOR_TOKEN_ENV}", "")`,
  'prefix = "/_sandboxplane/" + token',
  'operator_call = contextvars.ContextVar("sandboxplane_operator_call", default=False)',
  'checked = authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action',
  'def authenticate(self, *args, **kwargs):',
  '    return None if operator_call.get() else checked(self, *args, **kwargs)',
  'authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate',
  'from moto.moto_api import recorder',
  'record = recorder._record_request',
  'def record_aws_calls(request, body=None):',
  '    if not request.path.startswith("/moto-api/"):',
  '        record(request, body)',
  'recorder._record_request = record_aws_calls',
  'FORBIDDEN = [b\'{"error": "the emulator API is reserved for the sandbox plane"}\']',
  'class Guarded(server.DomainDispatcherApplication):',
  '    def __call__(self, environ, start_response):',
  '        path = environ.get("PATH_INFO", "")',
  `        environ.pop("${RECORDED_AS_ENVIRON}", None)`,
  `        given = environ.pop("HTTP_${OPERATOR_HEADER.toUpperCase().replaceAll('-', '_')}", None)`,
  '        if given is not None:',
  '            if not (token and hmac.compare_digest(given.encode("latin-1", "replace"), token.encode("latin-1"))):',
  '                start_response("403 Forbidden", [("Content-Type", "application/json")])',
  '                return FORBIDDEN',
  `            environ["${RECORDED_AS_ENVIRON}"] = "operator"`,
  '            marker = operator_call.set(True)',
  '            try:',
  '                return super().__call__(environ, start_response)',
  '            finally:',
  '                operator_call.reset(marker)',
  '        if token and hmac.compare_digest(path[: len(prefix)].encode("latin-1"), prefix.encode("latin-1")) and path[len(prefix) : len(prefix) + 1] in ("", "/"):',
  '            environ["PATH_INFO"] = path[len(prefix) :] or "/"',
  '        elif "moto-api" in unquote(path).lower() or path.startswith("/_sandboxplane"):',
  '            start_response("403 Forbidden", [("Content-Type", "application/json")])',
  '            return FORBIDDEN',
  '        return super().__call__(environ, start_response)',
  'server.DomainDispatcherApplication = Guarded',
  `server.main(["-H", "0.0.0.0", "-p", "${MOTO_PORT}"])`,
].join('\n');

/** The label scripts/build-moto-image.sh gives the image: the resource types its moto's CloudFormation creates. */
export const CLOUDFORMATION_TYPES_LABEL = 'io.sandboxplane.cloudformation.types';

/** The types a moto container's image says its CloudFormation creates (containers carry their image's labels). */
export function motoCloudFormationTypes(labels: Readonly<Record<string, string>>): ReadonlySet<string> {
  const listed = labels[CLOUDFORMATION_TYPES_LABEL];
  if (listed === undefined || listed === '') {
    throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `this moto container's image has no ${CLOUDFORMATION_TYPES_LABEL} label, so what its CloudFormation creates is unknown`, {
      hint: 'Rebuild the image with scripts/build-moto-image.sh (its tag moved on) and point SANDBOXPLANE_MOTO_IMAGE at the id it prints.',
    });
  }
  return new Set(listed.split(','));
}

export interface MotoAdapterOptions {
  readonly broker: ContainerBroker;
  /** The image built by scripts/build-moto-image.sh, by image id (sha256:…). */
  readonly image: string;
  readonly healthTimeoutMs: number;
  readonly extraLabels?: Readonly<Record<string, string>>;
}

/** moto's server in a container of its own: the emulator we can run end to end here. */
export function createMotoAdapter(options: MotoAdapterOptions): ContainerEmulatorAdapter {
  const catalog = SERVICE_CATALOGS.moto;
  return new ContainerEmulatorAdapter({
    adapter: 'moto',
    catalog,
    broker: options.broker,
    ...(options.extraLabels !== undefined ? { extraLabels: options.extraLabels } : {}),
    image: options.image,
    containerPort: MOTO_PORT,
    region: REGION,
    memoryBytes: 512 * MIB,
    pidsLimit: 256,
    nanoCpus: 1_000_000_000,
    // scripts/build-moto-image.sh makes user moto (10001); moto keeps its state in memory.
    user: `${MOTO_UID}:${MOTO_UID}`,
    readonlyRootfs: true,
    healthTimeoutMs: options.healthTimeoutMs,
    probe: motoHealthProbe,
    command: ['/opt/moto/bin/python', '-c', MOTO_GUARD_SCRIPT],
    operatorToken: { envName: OPERATOR_TOKEN_ENV },
    // IAM authentication from the first request; minting opens a window of its own calls only.
    environment: () => ({ INITIAL_NO_AUTH_ACTION_COUNT: '0', MOTO_RECORDER_FILEPATH: RECORDING_PATH }),
    // The sandbox's own key may list exactly the granted services, which is all a listing asks.
    listResources: (endpoint, services, credentials) => listThroughAwsApis(clientConfigFor('moto', endpoint, REGION, credentials), catalog, services),
    reset: resetMoto,
    mintCredentials: mintMotoCredentials,
    cloudFormation: { supportedTypes: motoCloudFormationTypes, operatorHeader: OPERATOR_HEADER },
    state: { capture: downloadMotoRecording, restore: restoreMotoRecording },
  });
}
