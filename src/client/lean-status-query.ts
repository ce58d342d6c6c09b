import fs from 'node:fs';
import http2 from 'node:http2';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { readTemporalTls, type TemporalTlsOptions, type TemporalTlsSettings } from '../config/temporal-tls';
import { LIFECYCLE_MESSAGES, workflowIdFor } from '../domain/contract-names';
import type { SandboxStatus } from '../domain/lifecycle-messages';
import { errorOfGrpcStatus, GRPC_DEADLINE_EXCEEDED, GRPC_NOT_FOUND, GRPC_OK, GRPC_UNIMPLEMENTED, grpcErrorMessage } from './grpc-status-errors';
import { decodeQueryWorkflowResponse, decodeRpcStatus, encodeQueryWorkflowRequest, GET_SYSTEM_INFO_PATH, QUERY_WORKFLOW_PATH } from './query-workflow-wire';
import { statusSeenBy, withTimeLeft } from './status-view';
import { TEMPORAL_CONNECT_TIMEOUT_MS, temporalUnreachable } from './temporal-unreachable';

export interface LeanStatusOptions {
  readonly address: string;
  readonly namespace: string;
  /** mTLS to the frontend, as the SDK's connection takes it; `undefined` for plain gRPC. */
  readonly tls: TemporalTlsSettings | undefined;
  /** The plane's payload codec (`payloadCodecFor`), applied to the result as the SDK's data converter applies it; `null` for none. */
  readonly payloadCodec: PayloadCodec | null;
  /** See `SandboxClientOptions.principal`. */
  readonly principal: string | undefined;
  readonly connectTimeoutMs?: number;
  /** Where grpc-js would read its proxy settings (`grpcProxyConfigured`); `process.env` by default. */
  readonly env?: NodeJS.ProcessEnv;
}

/** gRPC error details whose types the SDK's client turns into errors of their own (helpers.ts `rethrowKnownErrorTypes`). */
const SDK_KNOWN_DETAIL_TYPES = ['temporal.api.errordetails.v1.NamespaceNotFoundFailure', 'temporal.api.errordetails.v1.MultiOperationExecutionFailure'];

/** The variables grpc-js takes a proxy from (@grpc/grpc-js http_proxy.ts), lower case only as it reads them. */
const GRPC_PROXY_ENV = ['grpc_proxy', 'https_proxy', 'http_proxy', 'no_grpc_proxy', 'no_proxy'] as const;

/**
 * Whether the SDK's gRPC client would consider a proxy: any of its variables set and not
 * empty (grpc-js takes an empty one as unset). The lean query does not speak HTTP CONNECT,
 * so with any of them set `status` is the SDK's.
 */
export function grpcProxyConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return GRPC_PROXY_ENV.some((name) => (env[name] ?? '') !== '');
}

/** What the SDK's connection says when GetSystemInfo has no answer within the connect timeout (connection.ts `ensureConnected`). */
const SDK_NO_SYSTEM_INFO = 'Failed to connect to Temporal server';
/** What grpc-js says when no connection is up within the connect timeout (`waitForReady`). */
const NOT_CONNECTED = 'Failed to connect before the deadline';
/** How long a query may take before the lean path asks, as the SDK's connect does, whether the frontend answers at all. */
const PROBE_AFTER_MS = 250;
/**
 * How long a query may take on a frontend that does answer (GetSystemInfo came back) before
 * the lean path gives up and asks again through the SDK, which waits as long as the frontend
 * takes: the lean path always ends, and its answer is still the SDK's.
 */
const LIVE_QUERY_LIMIT_MS = 30_000;

/** What a client library sends with every call; the frontend reads them to check the client's version. */
function clientMetadata(namespace: string): http2.OutgoingHttpHeaders {
  return { 'client-name': 'temporal-typescript', 'client-version': sdkVersion(), 'temporal-namespace': namespace };
}

/** The Temporal client's version, which the SDK's connection would send; read from its package.json, not its code. */
function sdkVersion(): string {
  const file = require.resolve('@temporalio/client/package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * The sandbox's status as `SandboxClient.status` gives it, in one `QueryWorkflow` call over
 * `node:http2` instead of the Temporal SDK (whose load is most of a CLI `status`,
 * docs/performance.md#cli-start-up). Same query, same payload codec, same caller view and
 * the same errors for the answers it takes on: a result encoded as `json/plain`, no such
 * workflow (NOT_FOUND), a gRPC deadline (WAIT_TIMEOUT), and TEMPORAL_UNREACHABLE, with the
 * SDK's message, when within the connect timeout no HTTP/2 session comes up (the peer's
 * SETTINGS, what grpc-js waits for) or, the query being slow, the frontend does not answer
 * GetSystemInfo (what the SDK's connect asks). Any other answer (a query that failed or was
 * rejected, another gRPC status, another encoding, a proxy in the environment, a query still
 * unanswered after {@link LIVE_QUERY_LIMIT_MS} on a live frontend) is `undefined`: ask the
 * SDK's client, which says it as it always has.
 */
export async function leanSandboxStatus(sandboxId: string, options: LeanStatusOptions): Promise<SandboxStatus | undefined> {
  if (grpcProxyConfigured(options.env)) return undefined;
  const target = authorityOf(options.address);
  if (target === undefined) return undefined;
  const deadline = Date.now() + (options.connectTimeoutMs ?? TEMPORAL_CONNECT_TIMEOUT_MS);
  const open = sessionOpener(target, options.address, options.tls);
  const session = await connectBefore(deadline, options.address, options.tls, open);
  const answer = await answerInTime(
    session,
    clientMetadata(options.namespace),
    encodeQueryWorkflowRequest({
      namespace: options.namespace,
      workflowId: workflowIdFor(sandboxId),
      queryType: LIFECYCLE_MESSAGES.statusQuery,
    }),
    deadline,
    options,
  );
  if (answer === undefined) return undefined;
  if (answer.code !== GRPC_OK) {
    if (answer.detailTypes.some((type) => SDK_KNOWN_DETAIL_TYPES.some((known) => type.endsWith(`/${known}`) || type === known))) return undefined;
    if (answer.code !== GRPC_NOT_FOUND && answer.code !== GRPC_DEADLINE_EXCEEDED) return undefined;
    // As toSandboxError reads grpc-js's error: its details, or when empty its message.
    const cause = new Error(grpcErrorMessage(answer.code, answer.message));
    throw errorOfGrpcStatus(answer.code, answer.message || cause.message, sandboxId, cause);
  }
  let response: ReturnType<typeof decodeQueryWorkflowResponse>;
  try {
    response = decodeQueryWorkflowResponse(answer.body);
  } catch {
    return undefined;
  }
  if (response.rejectedStatus !== undefined || response.payloads === undefined || response.payloads.length !== 1 || response.external) return undefined;
  const decoded = options.payloadCodec === null ? response.payloads : await options.payloadCodec.decode([...response.payloads]);
  const status = fromJsonPayload(decoded[0]);
  if (status === undefined) return undefined;
  return withTimeLeft(statusSeenBy(options.principal, status));
}

/** The default payload converter's reading of a `json/plain` payload; `undefined` for any other encoding. */
function fromJsonPayload(payload: Payload | undefined): SandboxStatus | undefined {
  const encoding = payload?.metadata?.encoding;
  if (payload === undefined || encoding === undefined || encoding === null || Buffer.from(encoding).toString('utf8') !== 'json/plain') return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(payload.data ?? new Uint8Array()).toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as SandboxStatus) : undefined;
  } catch {
    return undefined;
  }
}

/** `http://host:port` (or https), as the SDK takes the address; `undefined` for one without a port, which the SDK completes itself. */
function authorityOf(address: string): URL | undefined {
  try {
    const url = new URL(`http://${address}`);
    return url.port === '' || url.pathname !== '/' ? undefined : url;
  } catch {
    return undefined;
  }
}

/**
 * Opens sessions to `target`, the certificate files read once here, as the SDK's connect
 * reads them: one that cannot be read is TEMPORAL_UNREACHABLE with the reader's message.
 */
function sessionOpener(target: URL, address: string, tls: TemporalTlsSettings | undefined): () => http2.ClientHttp2Session {
  if (tls === undefined) return () => http2.connect(target);
  let read: TemporalTlsOptions;
  try {
    read = readTemporalTls(tls);
  } catch (err) {
    throw temporalUnreachable(address, tls, (err as Error).message, err);
  }
  const secure: http2.SecureClientSessionOptions = {
    ...(read.serverRootCACertificate !== undefined ? { ca: read.serverRootCACertificate } : {}),
    ...(read.clientCertPair !== undefined ? { cert: read.clientCertPair.crt, key: read.clientCertPair.key } : {}),
    ...(read.serverNameOverride !== undefined ? { servername: read.serverNameOverride } : {}),
  };
  return () => http2.connect(`https://${target.host}`, secure);
}

const FIRST_BACKOFF_MS = 1_000;
const BACKOFF_MULTIPLIER = 1.6;

/**
 * A session whose peer has sent its SETTINGS (what grpc-js waits for before a channel is
 * ready: TCP alone, or a TLS handshake alone, is not a frontend), trying again after a
 * refusal or a failed handshake (as grpc-js does, from 1 s growing by 1.6×) until
 * `deadline`; then TEMPORAL_UNREACHABLE, as `connectTemporal` says it. A session that cannot
 * even be opened (a key that does not parse) is TEMPORAL_UNREACHABLE at once, as there.
 */
async function connectBefore(deadline: number, address: string, tls: TemporalTlsSettings | undefined, open: () => http2.ClientHttp2Session): Promise<http2.ClientHttp2Session> {
  let backoff = FIRST_BACKOFF_MS;
  let lastError: Error | undefined;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    let session: http2.ClientHttp2Session;
    try {
      session = open();
    } catch (err) {
      throw temporalUnreachable(address, tls, (err as Error).message, err);
    }
    const attempt = await new Promise<Error | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(new Error(NOT_CONNECTED)), left);
      session.once('remoteSettings', () => {
        clearTimeout(timer);
        resolve(undefined);
      });
      session.once('error', (err) => {
        clearTimeout(timer);
        resolve(err);
      });
      session.once('close', () => {
        clearTimeout(timer);
        resolve(new Error('the connection closed before the server spoke HTTP/2'));
      });
    });
    session.removeAllListeners('remoteSettings');
    session.removeAllListeners('error');
    session.removeAllListeners('close');
    // A later failure surfaces on the call's stream.
    session.on('error', () => undefined);
    if (attempt === undefined) return session;
    session.destroy();
    lastError = attempt;
    const wait = Math.min(backoff, deadline - Date.now());
    if (wait <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, wait));
    backoff *= BACKOFF_MULTIPLIER;
  }
  // grpc-js says no more than this; the last attempt's own failure is the error's cause.
  throw temporalUnreachable(address, tls, NOT_CONNECTED, lastError);
}

const TIMED_OUT = Symbol('timed out');

/** `promise`'s value, or {@link TIMED_OUT} when it has not settled within `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The query's answer, always in bounded time, and the session closed. A quick answer is
 * taken as it comes. A slow one makes it ask GetSystemInfo, as the SDK's connect asks
 * before its query, within the same connect timeout: no answer to either by then is
 * TEMPORAL_UNREACHABLE as the SDK says it (a frontend that took the connection and is
 * stalled); an answer means a live frontend, whose query is waited for up to
 * {@link LIVE_QUERY_LIMIT_MS}, then left to the SDK (`undefined`).
 */
async function answerInTime(
  session: http2.ClientHttp2Session,
  metadata: http2.OutgoingHttpHeaders,
  request: Buffer,
  connectDeadline: number,
  options: LeanStatusOptions,
): Promise<GrpcAnswer | undefined> {
  const asked = Date.now();
  const query = unaryCall(session, QUERY_WORKFLOW_PATH, metadata, request);
  const calls = [query];
  try {
    const quick = await within(query.answer, PROBE_AFTER_MS);
    if (quick !== TIMED_OUT) return quick;
    const probe = unaryCall(session, GET_SYSTEM_INFO_PATH, metadata, Buffer.alloc(0));
    calls.push(probe);
    const first = await within(Promise.race([query.answer.then((answer) => ({ query: answer })), probe.answer.then((answer) => ({ probe: answer }))]), connectDeadline - Date.now());
    if (first === TIMED_OUT)
      throw temporalUnreachable(options.address, options.tls, SDK_NO_SYSTEM_INFO, new Error('neither GetSystemInfo nor the query had an answer within the connect timeout'));
    if ('query' in first) return first.query;
    // The SDK's connect takes an old server's UNIMPLEMENTED as an answer; any other failure it says its own way.
    if (first.probe === undefined || (first.probe.code !== GRPC_OK && first.probe.code !== GRPC_UNIMPLEMENTED)) return undefined;
    const late = await within(query.answer, asked + LIVE_QUERY_LIMIT_MS - Date.now());
    return late === TIMED_OUT ? undefined : late;
  } finally {
    const abandoned = calls.filter((call) => !call.settled());
    for (const call of abandoned) call.cancel();
    if (abandoned.length > 0) session.destroy();
    else session.close();
  }
}

/** A finished unary call: its gRPC status, message and details' types, and the response message when OK. */
interface GrpcAnswer {
  readonly code: number;
  readonly message: string;
  readonly detailTypes: readonly string[];
  readonly body: Buffer;
}

/** A unary call in flight: its answer, whether it has come, and a way to give it up. */
interface UnaryCall {
  readonly answer: Promise<GrpcAnswer | undefined>;
  settled(): boolean;
  cancel(): void;
}

/**
 * One unary call on `session`; its answer is `undefined` when the exchange is not plain gRPC
 * (the stream could not be opened or failed, a compressed or second message, no status): the
 * SDK then asks again.
 */
function unaryCall(session: http2.ClientHttp2Session, path: string, metadata: http2.OutgoingHttpHeaders, message: Buffer): UnaryCall {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  let stream: http2.ClientHttp2Stream | undefined;
  let done = false;
  const answer = new Promise<GrpcAnswer | undefined>((resolve) => {
    try {
      stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...metadata });
    } catch {
      // A session closing under us, or out of streams: the SDK asks again.
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let status: http2.IncomingHttpHeaders | undefined;
    stream.on('response', (headers) => {
      // A trailers-only answer (an error) carries grpc-status in its headers.
      if (headers['grpc-status'] !== undefined) status = headers;
    });
    stream.on('trailers', (trailers) => (status = trailers));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', () => resolve(undefined));
    stream.on('close', () => resolve(status === undefined ? undefined : answerOf(status, Buffer.concat(chunks))));
    stream.end(frame);
  }).finally(() => (done = true));
  return {
    answer,
    settled: () => done,
    cancel: () => stream?.close(http2.constants.NGHTTP2_CANCEL),
  };
}

function answerOf(status: http2.IncomingHttpHeaders, data: Buffer): GrpcAnswer | undefined {
  const code = Number(status['grpc-status']);
  if (!Number.isInteger(code)) return undefined;
  const rawMessage = typeof status['grpc-message'] === 'string' ? status['grpc-message'] : '';
  let message = rawMessage;
  try {
    // As grpc-js decodes it (subchannel-call.ts): decodeURI, which leaves reserved characters (%2F) encoded.
    message = decodeURI(rawMessage);
  } catch {
    // Not percent-encoded after all: as sent.
  }
  const detailsBin = status['grpc-status-details-bin'];
  let detailTypes: readonly string[] = [];
  try {
    if (typeof detailsBin === 'string') detailTypes = decodeRpcStatus(Buffer.from(detailsBin, 'base64')).detailTypes;
  } catch {
    return undefined;
  }
  if (code !== GRPC_OK) return { code, message, detailTypes, body: Buffer.alloc(0) };
  // Exactly one uncompressed length-prefixed message.
  if (data.length < 5 || data[0] !== 0 || data.readUInt32BE(1) !== data.length - 5) return undefined;
  return { code, message, detailTypes, body: data.subarray(5) };
}
