import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';

/** The dev server's Web UI, by both names a browser may have typed. */
export function devUiOrigins(uiPort: number): readonly string[] {
  return [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`];
}

export const DEFAULT_CODEC_SERVER_PORT = 8234;
const MAX_BODY_BYTES = 8 * 1024 * 1024;
const ROUTE = /^\/(?:[^/]+\/)?(encode|decode)\/?$/;

export interface CodecServerOptions {
  readonly codec: PayloadCodec;
  /** 0 lets the system choose (tests). */
  readonly port: number;
  /** Origins whose pages may call it (the Temporal UI's); a request from any other origin is refused. */
  readonly origins: readonly string[];
  readonly logger?: CodecServerLogger;
}

/** What the server logs through: a pino logger (src/logging) is one. */
export interface CodecServerLogger {
  debug(context: object, message: string): void;
  error(context: object, message: string): void;
}

export interface CodecServer {
  /** `http://127.0.0.1:<port>`: the UI's codec endpoint (`--ui-codec-endpoint`). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  /** Lets the process exit while it still listens. */
  unref(): void;
}

/** proto3 JSON bytes: standard or URL-safe base64. */
const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
const bodySchema = z
  .object({
    // The temporal CLI leaves the list out when it has nothing to code: that is an empty list.
    payloads: z.array(z.object({ metadata: z.record(z.string(), base64).nullish(), data: base64.nullish() }).passthrough()).default([]),
  })
  // Strict: with the list optional, a body of some other shape must still be refused, not coded as nothing.
  .strict();

type JsonPayload = { metadata: Record<string, string>; data: string };

function fromJson(payload: z.infer<typeof bodySchema>['payloads'][number]): Payload {
  const metadata = Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, new Uint8Array(Buffer.from(value, 'base64'))]));
  return { metadata, data: new Uint8Array(Buffer.from(payload.data ?? '', 'base64')) };
}

function toJson(payload: Payload): JsonPayload {
  const metadata = Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value ?? new Uint8Array()).toString('base64')]));
  return { metadata, data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, 'INVALID_INPUT', `the body is larger than ${MAX_BODY_BYTES} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function parseBody(text: string): Payload[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'INVALID_INPUT', `the body is not JSON (${(err as Error).message}); send {"payloads": [{"metadata": {...}, "data": "<base64>"}]}`);
  }
  const parsed = bodySchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(body)'}: ${issue.message}`);
    throw new HttpError(400, 'INVALID_INPUT', `the body is not {"payloads": [...]} with base64 metadata and data: ${problems.join('; ')}`);
  }
  return parsed.data.payloads.map(fromJson);
}

/**
 * Temporal's codec server HTTP API over the plane's payload codec, on 127.0.0.1 only:
 * `POST /encode` and `POST /decode` (also under a namespace segment, `/default/decode`,
 * as the CLI's `--codec-endpoint` templating sends them), each taking and returning
 * `{"payloads": [...]}` in proto3 JSON. CORS answers only the configured origins; a
 * browser page from any other origin is refused, so another site cannot have a
 * visitor's browser decrypt history for it.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const allowed = new Set(options.origins);
  const server = http.createServer((request, response) => {
    void handle(request, response);
  });

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const origin = request.headers.origin;
    const headers: Record<string, string> = { Vary: 'Origin' };
    const send = (status: number, body?: unknown) => {
      const text = body === undefined ? '' : JSON.stringify(body);
      response.writeHead(status, { ...headers, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) });
      response.end(text);
      options.logger?.debug({ method: request.method, path: request.url, origin, status }, 'codec server request');
    };
    try {
      // A request without Origin comes from a program (the temporal CLI, curl), not a web page.
      if (origin !== undefined) {
        if (!allowed.has(origin)) throw new HttpError(403, 'ORIGIN_REFUSED', `origin ${origin} may not use this codec server; allowed: ${[...allowed].join(', ')}`);
        Object.assign(headers, {
          'Access-Control-Allow-Origin': origin,
          'Access-Control-Allow-Credentials': 'true',
          'Access-Control-Allow-Methods': 'POST, OPTIONS',
          'Access-Control-Allow-Headers': 'Content-Type, X-Namespace, Authorization',
          'Access-Control-Max-Age': '600',
        });
      }
      const route = ROUTE.exec(new URL(request.url ?? '/', 'http://codec').pathname)?.[1];
      if (route === undefined) throw new HttpError(404, 'NOT_FOUND', `no such endpoint ${request.url}; use POST /encode or POST /decode`);
      if (request.method === 'OPTIONS') return send(204);
      if (request.method !== 'POST') {
        headers.Allow = 'POST, OPTIONS';
        throw new HttpError(405, 'INVALID_INPUT', `${request.method} is not allowed; use POST /${route}`);
      }
      const payloads = parseBody(await readBody(request));
      const result = route === 'encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
      send(200, { payloads: result.map(toJson) });
    } catch (err) {
      if (err instanceof HttpError) return send(err.status, { error: { code: err.code, message: err.message } });
      if (isSandboxPlaneError(err)) return send(422, { error: { code: err.code, message: err.message, hint: err.hint } });
      options.logger?.error({ err }, 'codec server failure');
      send(500, { error: { code: 'INTERNAL', message: (err as Error).message } });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new SandboxPlaneError('INVALID_INPUT', `port ${options.port} on 127.0.0.1 is already in use`, { hint: 'Stop what listens there, or pick another port (--port).' })
          : err,
      ),
    );
    server.listen(options.port, '127.0.0.1', () => {
      server.removeAllListeners('error');
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    unref: () => server.unref(),
  };
}
