/**
 * `sandboxctl gateway` (DESIGN §18): the one door for agents that must not reach Temporal.
 * It holds the Temporal connection and the payload codec; a caller holds an API key, and
 * the key alone says who it is. Keys are read from the store's file at each request
 * (so the gateway runs beside the store role), checked with their slow hash once per
 * process, and limited to their requests per minute.
 */
import fs from 'node:fs';
import { createSecureContext as tlsContext } from 'node:tls';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Client, Connection } from '@temporalio/client';
import { SandboxClient } from '../client/sandbox-client';
import { connectTemporal } from '../client/temporal-connection';
import { payloadCodecFor } from '../codec/codec-settings';
import type { Config } from '../config/config';
import { SandboxPlaneError } from '../domain/errors';
import type { Logger } from '../logging/logger';
import { createSandboxMcpServer, packageVersion } from '../mcp/mcp-server';
import { API_KEYS_SCHEMA_VERSION, Store } from '../store';
import { inSpan } from '../telemetry/spans';
import { sendError, sendJson } from './http-errors';
import { matchRoute } from './http-routes';
import { KeyVerifier, type Caller } from './key-verifier';
import { openApiDocument } from './openapi';
import { InFlight } from './in-flight';
import { RateLimiter } from './rate-limiter';

/** Larger than any request the schemas allow (a template is at most 1 MiB). */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

export interface GatewayOptions {
  /** `host:port` to listen on; port 0 lets the system choose. */
  readonly listen: string;
  /** PEM files of the certificate (its chain after it) and key to serve HTTPS with; without them, plain HTTP. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
}

export interface RunningGateway {
  /** `http://host:port` or `https://host:port`, as bound. */
  readonly url: string;
  close(): Promise<void>;
}

/** A body past {@link MAX_BODY_BYTES}: answered, then the connection is closed (the rest of it is never read). */
const tooLarge = () =>
  new SandboxPlaneError('INVALID_INPUT', `the body is larger than ${MAX_BODY_BYTES} bytes`, {
    hint: 'Send a smaller request (a template is at most 1 MiB).',
    details: { closeConnection: true },
  });

async function readBody(req: IncomingMessage): Promise<unknown> {
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SandboxPlaneError('INVALID_INPUT', 'the body is not JSON', { hint: 'Send a JSON object with content-type application/json.' });
  }
}

/** One Temporal connection for every caller, made on first use; a failed attempt is forgotten, so a gateway started before Temporal works once it is up. */
function lazyTemporal(config: Config): { get: () => Promise<Client>; close: () => Promise<void> } {
  let connecting: Promise<{ client: Client; connection: Connection }> | undefined;
  return {
    get: async () => {
      connecting ??= connectTemporal({
        address: config.temporalAddress,
        namespace: config.temporalNamespace,
        payloadCodec: payloadCodecFor(config.codec),
        tls: config.temporalTls ?? null,
      }).catch((err: unknown) => {
        connecting = undefined;
        throw err;
      });
      return (await connecting).client;
    },
    close: async () => {
      const pending = connecting;
      connecting = undefined;
      await (await pending?.catch(() => undefined))?.connection.close();
    },
  };
}

/** The store's file, read-only: the key table (written by the store role through `keys add`). */
function openKeyTable(config: Config): Store {
  const store = Store.open(config.storePath, { readonly: true, migrate: false });
  if (store.schemaVersion < API_KEYS_SCHEMA_VERSION) {
    const version = store.schemaVersion;
    store.close();
    throw new SandboxPlaneError('STORE_UNAVAILABLE', `${config.storePath} is at schema version ${version}, before the gateway's key table (${API_KEYS_SCHEMA_VERSION})`, {
      hint: 'Start the store worker of this build first (`sandboxctl worker`): it migrates the file; the gateway only reads it.',
    });
  }
  return store;
}

export async function startGateway(config: Config, options: GatewayOptions, logger: Logger): Promise<RunningGateway> {
  const tls = options.tls === undefined ? undefined : tlsFiles(options.tls);
  const store = openKeyTable(config);
  const verifier = new KeyVerifier(store.apiKeys);
  const limiter = new RateLimiter();
  const inFlight = new InFlight();
  const temporal = lazyTemporal(config);
  const document = openApiDocument(packageVersion());
  const sandboxesFor = async (caller: Caller) =>
    new SandboxClient({ client: await temporal.get(), taskQueue: config.taskQueue, principal: caller.principal, forkMax: config.snapshots.forkMax });

  const serveMcp = async (req: IncomingMessage, res: ServerResponse, caller: Caller, body: unknown) => {
    // Stateless: each request its own server and transport, so nothing lives between calls;
    // a tools/call then has no initialize before it to name its client, and the key names the caller anyway.
    const server = createSandboxMcpServer(() => sandboxesFor(caller), { actor: () => `mcp key:${caller.keyId}` });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<{ status: number; caller?: Caller; code?: string; route: string }> => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const method = req.method ?? 'GET';
    if (url.pathname === '/v1/openapi.json' && method === 'GET') {
      sendJson(res, 200, document);
      return { status: 200, route: url.pathname };
    }
    if (url.pathname === '/healthz' && method === 'GET') {
      sendJson(res, 200, { ok: true });
      return { status: 200, route: url.pathname };
    }
    let caller: Caller | undefined;
    let route = url.pathname;
    let leave: (() => void) | undefined;
    try {
      // Who asks comes first: an unknown path tells a caller without a key nothing.
      caller = await verifier.verify(req.headers.authorization);
      limiter.take(caller.keyId, caller.ratePerMinute);
      leave = inFlight.enter(caller.keyId, caller.maxInFlight);
      // A caller that hangs up stops counting, whatever its request still waits for.
      res.once('close', leave);
      if (url.pathname === '/mcp') {
        // Stateless, with JSON answers: no stream to open (GET) or session to end (DELETE).
        if (method !== 'POST')
          throw new SandboxPlaneError('INVALID_INPUT', `/mcp takes POST only, not ${method}`, { hint: 'Send each JSON-RPC message as a POST.', details: { allow: 'POST' } });
        const message = await readBody(req);
        // One message a request, so the key's rate counts each call.
        if (Array.isArray(message)) throw new SandboxPlaneError('INVALID_INPUT', '/mcp takes one JSON-RPC message a request, not a batch', { hint: 'Send each message as its own POST.' });
        await serveMcp(req, res, caller, message);
        return { status: res.statusCode, caller, route };
      }
      const matched = matchRoute(method, url.pathname);
      if (matched === undefined) throw new SandboxPlaneError('NOT_FOUND', `no route ${method} ${url.pathname}`, { hint: 'GET /v1/openapi.json lists the routes.' });
      if ('allowed' in matched) {
        throw new SandboxPlaneError('INVALID_INPUT', `${url.pathname} does not take ${method}`, {
          hint: 'GET /v1/openapi.json lists the methods of each route.',
          details: { allow: matched.allowed.join(', ') },
        });
      }
      route = `${method} ${matched.route.path}`;
      const body = await readBody(req);
      const sandboxes = await sandboxesFor(caller);
      const answer = await matched.route.handle({ params: matched.params, query: url.searchParams, body, sandboxes, actor: `key:${caller.keyId}` });
      sendJson(res, matched.route.successStatus, answer);
      return { status: matched.route.successStatus, caller, route };
    } catch (err) {
      if (res.headersSent) throw err;
      if ((err as Partial<SandboxPlaneError>).details?.closeConnection === true) {
        res.setHeader('connection', 'close');
        res.once('finish', () => req.destroy());
      }
      const { status, code } = sendError(res, err, url.pathname.split('/')[3] ?? '(none)');
      return { status, code, route, ...(caller !== undefined ? { caller } : {}) };
    } finally {
      leave?.();
    }
  };

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const started = Date.now();
    void inSpan(`gateway ${req.method ?? 'GET'}`, { 'http.method': req.method ?? 'GET' }, async (span) => {
      const outcome = await handle(req, res);
      span.setAttribute('http.route', outcome.route);
      span.setAttribute('http.status_code', outcome.status);
      if (outcome.caller !== undefined) span.setAttribute('gateway.key_id', outcome.caller.keyId);
      // The gateway's audit of every request: which key, as whom, what, and how it ended.
      logger.info(
        {
          keyId: outcome.caller?.keyId ?? null,
          principal: outcome.caller?.principal ?? null,
          method: req.method,
          route: outcome.route,
          status: outcome.status,
          code: outcome.code,
          ms: Date.now() - started,
        },
        'gateway request',
      );
    }).catch((err: unknown) => {
      logger.error({ err, url: req.url }, 'gateway request failed');
      if (!res.headersSent) sendError(res, err, '(request)');
      else res.destroy();
    });
  };
  const server: Server = tls === undefined ? createServer(serve) : createTlsServer(tls, serve);

  const [host, port] = splitListen(options.listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new SandboxPlaneError('INVALID_INPUT', `cannot listen on ${options.listen}: ${err.code ?? err.message}`, { hint: 'Choose another --listen address (host:port).', cause: err })),
    );
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const url = `${tls === undefined ? 'http' : 'https'}://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  return {
    url,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await temporal.close();
      store.close();
    },
  };
}

/** The certificate and key, read now: a file that is missing or not PEM is INVALID_INPUT naming the flag, before anything listens. */
function tlsFiles(tls: NonNullable<GatewayOptions['tls']>): { cert: Buffer; key: Buffer } {
  const read = (file: string, flag: string, marker: RegExp) => {
    let text: Buffer;
    try {
      text = fs.readFileSync(file);
    } catch (err) {
      throw new SandboxPlaneError('INVALID_INPUT', `${flag}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { hint: `Name a readable PEM file with ${flag}.` });
    }
    if (!marker.test(text.toString('latin1'))) throw new SandboxPlaneError('INVALID_INPUT', `${flag}: ${file} is not a PEM file`, { hint: `Name a PEM file with ${flag}.` });
    return text;
  };
  const cert = read(tls.certFile, '--tls-cert', /-----BEGIN CERTIFICATE-----/);
  const key = read(tls.keyFile, '--tls-key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/);
  try {
    // Pairs the two now, so a key of another certificate fails here rather than at every handshake.
    tlsContext({ cert, key });
  } catch (err) {
    throw new SandboxPlaneError('INVALID_INPUT', `--tls-cert and --tls-key do not make a pair: ${(err as Error).message}`, { hint: "Give the certificate's own key." });
  }
  return { cert, key };
}

function splitListen(listen: string): [string, number] {
  const at = listen.lastIndexOf(':');
  return [listen.slice(0, at).replace(/^\[|\]$/g, ''), Number(listen.slice(at + 1))];
}
