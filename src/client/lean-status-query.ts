import fs from 'node:fs';
import http2 from 'node:http2';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { readTemporalTls, type TemporalTlsSettings } from '../config/temporal-tls';
import { LIFECYCLE_MESSAGES, workflowIdFor } from '../domain/contract-names';
import type { SandboxStatus } from '../domain/lifecycle-messages';
import { errorOfGrpcStatus, GRPC_DEADLINE_EXCEEDED, GRPC_NOT_FOUND } from './grpc-status-errors';
import { decodeQueryWorkflowResponse, decodeRpcStatus, encodeQueryWorkflowRequest, QUERY_WORKFLOW_PATH } from './query-workflow-wire';
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
}

/** gRPC error details whose types the SDK's client turns into errors of their own (helpers.ts `rethrowKnownErrorTypes`). */
const SDK_KNOWN_DETAIL_TYPES = ['temporal.api.errordetails.v1.NamespaceNotFoundFailure', 'temporal.api.errordetails.v1.MultiOperationExecutionFailure'];

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
 * workflow (NOT_FOUND), a frontend that does not answer within the connect timeout
 * (TEMPORAL_UNREACHABLE), a gRPC deadline (WAIT_TIMEOUT). Any other answer (a query that
 * failed or was rejected, another gRPC status, another encoding) is `undefined`: ask the
 * SDK's client, which says it as it always has.
 */
export async function leanSandboxStatus(sandboxId: string, options: LeanStatusOptions): Promise<SandboxStatus | undefined> {
  const target = authorityOf(options.address);
  if (target === undefined) return undefined;
  const deadline = Date.now() + (options.connectTimeoutMs ?? TEMPORAL_CONNECT_TIMEOUT_MS);
  const session = await connectBefore(deadline, options.address, options.tls, () => openSession(target, options.tls));
  let answer: GrpcAnswer | undefined;
  try {
    answer = await unaryCall(session, QUERY_WORKFLOW_PATH, clientMetadata(options.namespace), {
      namespace: options.namespace,
      workflowId: workflowIdFor(sandboxId),
      queryType: LIFECYCLE_MESSAGES.statusQuery,
    });
  } finally {
    session.close();
  }
  if (answer === undefined) return undefined;
  if (answer.code !== 0) {
    if (answer.detailTypes.some((type) => SDK_KNOWN_DETAIL_TYPES.some((known) => type.endsWith(`/${known}`) || type === known))) return undefined;
    if (answer.code !== GRPC_NOT_FOUND && answer.code !== GRPC_DEADLINE_EXCEEDED) return undefined;
    throw errorOfGrpcStatus(answer.code, answer.message, sandboxId, new Error(`${answer.code} ${answer.message}`));
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

function openSession(target: URL, tls: TemporalTlsSettings | undefined): http2.ClientHttp2Session {
  if (tls === undefined) return http2.connect(target);
  const read = readTemporalTls(tls);
  return http2.connect(`https://${target.host}`, {
    ...(read.serverRootCACertificate !== undefined ? { ca: read.serverRootCACertificate } : {}),
    ...(read.clientCertPair !== undefined ? { cert: read.clientCertPair.crt, key: read.clientCertPair.key } : {}),
    ...(read.serverNameOverride !== undefined ? { servername: read.serverNameOverride } : {}),
  });
}

const FIRST_BACKOFF_MS = 1_000;
const BACKOFF_MULTIPLIER = 1.6;

/**
 * A connected session, trying again after a refusal or a failed handshake (as grpc-js
 * does, from 1 s growing by 1.6×) until `deadline`; then TEMPORAL_UNREACHABLE, as
 * `connectTemporal` says it.
 */
async function connectBefore(deadline: number, address: string, tls: TemporalTlsSettings | undefined, open: () => http2.ClientHttp2Session): Promise<http2.ClientHttp2Session> {
  let backoff = FIRST_BACKOFF_MS;
  let lastError: Error | undefined;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const attempt = await new Promise<http2.ClientHttp2Session | Error>((resolve) => {
      const session = open();
      const timer = setTimeout(() => {
        session.destroy();
        resolve(new Error('Failed to connect before the deadline'));
      }, left);
      session.once('connect', () => {
        clearTimeout(timer);
        session.removeAllListeners('error');
        // A later failure surfaces on the call's stream.
        session.on('error', () => undefined);
        resolve(session);
      });
      session.once('error', (err) => {
        clearTimeout(timer);
        session.destroy();
        resolve(err);
      });
    });
    if (!(attempt instanceof Error)) return attempt;
    lastError = attempt;
    const wait = Math.min(backoff, deadline - Date.now());
    if (wait <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, wait));
    backoff *= BACKOFF_MULTIPLIER;
  }
  const reason = `Failed to connect before the deadline${lastError !== undefined && lastError.message !== 'Failed to connect before the deadline' ? ` (${lastError.message})` : ''}`;
  throw temporalUnreachable(address, tls, reason, lastError);
}

/** A finished unary call: its gRPC status, message and details' types, and the response message when OK. */
interface GrpcAnswer {
  readonly code: number;
  readonly message: string;
  readonly detailTypes: readonly string[];
  readonly body: Buffer;
}

/**
 * One unary call on `session`; `undefined` when the exchange is not plain gRPC (the stream
 * failed, a compressed or second message, no status): the SDK then asks again.
 */
function unaryCall(
  session: http2.ClientHttp2Session,
  path: string,
  metadata: http2.OutgoingHttpHeaders,
  request: Parameters<typeof encodeQueryWorkflowRequest>[0],
): Promise<GrpcAnswer | undefined> {
  const message = encodeQueryWorkflowRequest(request);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return new Promise((resolve) => {
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...metadata });
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
  });
}

function answerOf(status: http2.IncomingHttpHeaders, data: Buffer): GrpcAnswer | undefined {
  const code = Number(status['grpc-status']);
  if (!Number.isInteger(code)) return undefined;
  const rawMessage = typeof status['grpc-message'] === 'string' ? status['grpc-message'] : '';
  let message = rawMessage;
  try {
    message = decodeURIComponent(rawMessage);
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
  if (code !== 0) return { code, message, detailTypes, body: Buffer.alloc(0) };
  // Exactly one uncompressed length-prefixed message.
  if (data.length < 5 || data[0] !== 0 || data.readUInt32BE(1) !== data.length - 5) return undefined;
  return { code, message, detailTypes, body: data.subarray(5) };
}
