/**
 * The lean `status` query (src/client/lean-status-query.ts) against servers made on loopback
 * for each case: a listener that never answers, an HTTP/2 server that never answers a call,
 * a slow query, gRPC errors, mTLS. Where the SDK path meets the same server, both must say the
 * same thing (test/cli-status.test.ts compares them on a real dev server and worker).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import type { TLSSocket } from 'node:tls';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { grpcProxyConfigured, leanSandboxStatus, type LeanStatusOptions } from '../../src/client/lean-status-query';
import { GET_SYSTEM_INFO_PATH, QUERY_WORKFLOW_PATH } from '../../src/client/query-workflow-wire';
import { SandboxClient } from '../../src/client/sandbox-client';
import { connectTemporal } from '../../src/client/temporal-connection';
import type { SandboxStatus } from '../../src/domain/lifecycle-messages';
import type { SandboxPlaneError } from '../../src/domain/errors';
import { REPO_ROOT } from '../harness/cli';
import { freePort } from '../harness/free-port';
import { rejectsWith } from '../helpers/rejects-with';

const TIMEOUT_MS = 1_500;
const STATUS = { id: 'sbx-1', state: 'FAILED', principal: 'agent-1', expiresAt: null, parent: null, root: 'sbx-1' } as unknown as SandboxStatus;

const options = (address: string, extra: Partial<LeanStatusOptions> = {}): LeanStatusOptions => ({
  address,
  namespace: 'default',
  tls: undefined,
  payloadCodec: null,
  principal: undefined,
  connectTimeoutMs: TIMEOUT_MS,
  env: {},
  ...extra,
});

/** One gRPC message, length-prefixed. */
function frame(message: Uint8Array): Buffer {
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  Buffer.from(message).copy(framed, 5);
  return framed;
}

/** The QueryWorkflowResponse the frontend sends for a `status` query answered with `status`. */
const statusResponse = (status: SandboxStatus) =>
  temporal.api.workflowservice.v1.QueryWorkflowResponse.encode({
    queryResult: { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(status)) }] },
  }).finish();

function answerOk(stream: http2.ServerHttp2Stream, message: Uint8Array): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  stream.end(frame(message));
}

function answerError(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': message }, { endStream: true });
}

type Handler = (stream: http2.ServerHttp2Stream, path: string) => void;

interface TestServer {
  readonly address: string;
  close(): Promise<void>;
}

/** An HTTP/2 server on loopback whose calls `handle` answers (or not); closing it drops every session. */
async function grpcServer(handle: Handler, tls?: http2.SecureServerOptions): Promise<TestServer> {
  const server = tls === undefined ? http2.createServer() : http2.createSecureServer(tls);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined);
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    // The body is the request; a handler that answers waits for it.
    stream.resume();
    handle(stream, String(headers[':path']));
  });
  return listening(server, sessions);
}

/** A TCP listener that accepts and never writes a byte (a paused frontend's kernel does as much). */
async function silentTcp(): Promise<TestServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  return listening(server, sockets);
}

/** `server` listening on a loopback port; closing it destroys the `open` connections first, so it closes at once. */
async function listening(server: net.Server, open: ReadonlySet<{ destroy(): void }>): Promise<TestServer> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const connection of open) connection.destroy();
        server.close(() => resolve());
      }),
  };
}

/** What the SDK path (`connectTemporal`) says of `address`, or 'connected'. */
async function sdkConnectError(address: string): Promise<SandboxPlaneError | 'connected'> {
  try {
    const { connection } = await connectTemporal({ address, namespace: 'default', payloadCodec: null, tls: null, connectTimeoutMs: TIMEOUT_MS });
    await connection.close();
    return 'connected';
  } catch (err) {
    return err as SandboxPlaneError;
  }
}

async function timed<T>(work: Promise<T>): Promise<{ result: T | unknown; ms: number; failed: boolean }> {
  const started = Date.now();
  try {
    return { result: await work, ms: Date.now() - started, failed: false };
  } catch (err) {
    return { result: err, ms: Date.now() - started, failed: true };
  }
}

describe('the lean status query always ends, and says what the SDK path says', () => {
  for (const [what, start] of [
    ['a listener that accepts TCP and never speaks HTTP/2', silentTcp],
    ['an HTTP/2 server that never answers a call', () => grpcServer(() => undefined)],
  ] as const) {
    test(`${what} is TEMPORAL_UNREACHABLE after the connect timeout, as the SDK says it`, { timeout: 10_000 }, async () => {
      const server = await start();
      try {
        const [lean, sdk] = await Promise.all([timed(leanSandboxStatus('sbx-1', options(server.address))), sdkConnectError(server.address)]);
        assert.ok(lean.failed, 'the lean query answered');
        rejectsWith('TEMPORAL_UNREACHABLE', /cannot reach Temporal at 127\.0\.0\.1:\d+ \(without TLS/)(lean.result);
        assert.ok(lean.ms >= TIMEOUT_MS - 100 && lean.ms < TIMEOUT_MS + 1_500, `gave up after ${lean.ms} ms, for a timeout of ${TIMEOUT_MS}`);
        assert.notEqual(sdk, 'connected');
        assert.equal((lean.result as SandboxPlaneError).message, (sdk as SandboxPlaneError).message);
      } finally {
        await server.close();
      }
    });
  }

  test('a process whose query meets a silent HTTP/2 server exits on its own', { timeout: 15_000 }, async () => {
    const server = await grpcServer(() => undefined);
    const module = path.join(REPO_ROOT, 'src', 'client', 'lean-status-query.ts');
    const probe = `require(${JSON.stringify(module)}).leanSandboxStatus('sbx-1', { address: ${JSON.stringify(server.address)}, namespace: 'default', tls: undefined, payloadCodec: null, principal: undefined, connectTimeoutMs: ${TIMEOUT_MS}, env: {} }).then(
      () => process.stdout.write('answered'),
      (err) => process.stdout.write(String(err.code)),
    );`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', probe], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 12_000);
    try {
      const [code, signal] = (await new Promise((resolve) => child.once('exit', (...args) => resolve(args)))) as [number | null, string | null];
      assert.equal(signal, null, `the process did not exit by itself (printed ${JSON.stringify(stdout)})`);
      assert.equal(code, 0);
      assert.equal(stdout, 'TEMPORAL_UNREACHABLE');
    } finally {
      clearTimeout(killer);
      await server.close();
    }
  });

  test('a live frontend whose query is slow is waited for, as the SDK waits', { timeout: 10_000 }, async () => {
    const asked: string[] = [];
    const server = await grpcServer((stream, path) => {
      asked.push(path);
      if (path === GET_SYSTEM_INFO_PATH) answerOk(stream, temporal.api.workflowservice.v1.GetSystemInfoResponse.encode({ serverVersion: 'test' }).finish());
      else if (path === QUERY_WORKFLOW_PATH) setTimeout(() => answerOk(stream, statusResponse(STATUS)), TIMEOUT_MS + 500);
    });
    try {
      const status = await leanSandboxStatus('sbx-1', options(server.address));
      assert.equal(status?.id, 'sbx-1');
      assert.deepEqual(asked, [QUERY_WORKFLOW_PATH, GET_SYSTEM_INFO_PATH], 'the slow query made it ask whether the frontend is there');
    } finally {
      await server.close();
    }
  });

  test('a quick answer is read without asking anything else', async () => {
    const asked: string[] = [];
    const server = await grpcServer((stream, path) => {
      asked.push(path);
      answerOk(stream, statusResponse(STATUS));
    });
    try {
      assert.deepEqual(await leanSandboxStatus('sbx-1', options(server.address)), { ...STATUS, timeLeftSeconds: null });
      assert.deepEqual(asked, [QUERY_WORKFLOW_PATH]);
    } finally {
      await server.close();
    }
  });

  test("a gRPC deadline reads as the SDK path reads it: without a message, grpc-js's own; a message decoded as grpc-js decodes it (decodeURI)", async () => {
    const queries: string[] = [];
    const server = await grpcServer((stream, path) => {
      if (path === GET_SYSTEM_INFO_PATH) answerOk(stream, new Uint8Array());
      else answerError(stream, 4, queries.shift() ?? '');
    });
    const { client, connection } = await connectTemporal({ address: server.address, namespace: 'default', payloadCodec: null, tls: null, connectTimeoutMs: TIMEOUT_MS });
    const sdk = new SandboxClient({ client, taskQueue: 'lean-status-test' });
    try {
      for (const [sent, read] of [
        ['', /^4 DEADLINE_EXCEEDED: $/],
        ['query%20timed out after 10%25 of a%2Fb', /^query timed out after 10% of a%2Fb$/],
      ] as const) {
        queries.push(sent, sent);
        const sdkError = await sdk.status('sbx-1').then(
          () => assert.fail('the SDK path answered'),
          (err: unknown) => err as SandboxPlaneError,
        );
        rejectsWith('WAIT_TIMEOUT', read)(sdkError);
        await assert.rejects(leanSandboxStatus('sbx-1', options(server.address)), (err: unknown) => {
          rejectsWith('WAIT_TIMEOUT', read)(err);
          assert.deepEqual((err as SandboxPlaneError).toJSON(), sdkError.toJSON());
          return true;
        });
      }
    } finally {
      await connection.close();
      await server.close();
    }
  });

  test('a proxy in the environment (any variable grpc-js reads) leaves the query to the SDK, which goes through it', async () => {
    for (const name of ['grpc_proxy', 'https_proxy', 'http_proxy', 'no_grpc_proxy', 'no_proxy']) {
      assert.equal(grpcProxyConfigured({ [name]: 'http://proxy.example:3128' }), true, name);
      assert.equal(grpcProxyConfigured({ [name]: '' }), false, `${name} empty, which grpc-js takes as unset`);
    }
    // grpc-js reads the lower-case names only.
    assert.equal(grpcProxyConfigured({ HTTPS_PROXY: 'http://proxy.example:3128', NO_PROXY: 'localhost' }), false);
    const server = await silentTcp();
    try {
      const started = Date.now();
      assert.equal(await leanSandboxStatus('sbx-1', options(server.address, { env: { https_proxy: 'http://proxy.example:3128' } })), undefined);
      assert.ok(Date.now() - started < 500, 'returned before connecting');
    } finally {
      await server.close();
    }
  });

  test('a certificate file that cannot be read is TEMPORAL_UNREACHABLE, as the SDK path says it', async () => {
    const tls = { certPath: '/nonexistent/client.pem', keyPath: '/nonexistent/client.key', caPath: undefined, serverName: undefined };
    const address = `127.0.0.1:${await freePort()}`;
    await assert.rejects(leanSandboxStatus('sbx-1', options(address, { tls })), (err: unknown) => {
      rejectsWith('TEMPORAL_UNREACHABLE', /cannot reach Temporal at .* \(with TLS, client certificate \/nonexistent\/client\.pem.*ENOENT/)(err);
      return true;
    });
    const sdk = await connectTemporal({ address, namespace: 'default', payloadCodec: null, tls, connectTimeoutMs: TIMEOUT_MS }).then(
      () => assert.fail('the SDK path connected'),
      (err: unknown) => err as SandboxPlaneError,
    );
    await assert.rejects(leanSandboxStatus('sbx-1', options(address, { tls })), (err: unknown) => (err as Error).message === sdk.message);
  });
});

describe('the lean status query over mTLS', () => {
  let dir: string;
  const file = (name: string) => path.join(dir, name);

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lean-status-tls-'));
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=lean-status test CA');
    for (const [name, ext] of [
      ['server', 'subjectAltName=DNS:sandboxplane-temporal\nextendedKeyUsage=serverAuth\n'],
      ['client', 'extendedKeyUsage=clientAuth\n'],
    ] as const) {
      fs.writeFileSync(file(`${name}.ext`), ext);
      openssl('req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name === 'server' ? 'sandboxplane-temporal' : 'lean-status-client'}`);
      openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
    }
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('presents the client certificate, checks the server against the CA and the server name, and reads the answer', async () => {
    const clients: string[] = [];
    const server = await grpcServer(
      (stream, path) => {
        const socket = stream.session?.socket as TLSSocket;
        clients.push(String(socket.getPeerCertificate().subject?.CN));
        if (path === QUERY_WORKFLOW_PATH) answerOk(stream, statusResponse(STATUS));
      },
      { key: fs.readFileSync(file('server.key')), cert: fs.readFileSync(file('server.pem')), ca: fs.readFileSync(file('ca.pem')), requestCert: true, rejectUnauthorized: true },
    );
    const tls = { certPath: file('client.pem'), keyPath: file('client.key'), caPath: file('ca.pem'), serverName: 'sandboxplane-temporal' };
    try {
      assert.deepEqual(await leanSandboxStatus('sbx-1', options(server.address, { tls })), { ...STATUS, timeLeftSeconds: null });
      assert.deepEqual(clients, ['lean-status-client']);
      // The server's certificate names sandboxplane-temporal, not 127.0.0.1: without the override it is refused.
      await assert.rejects(leanSandboxStatus('sbx-1', options(server.address, { tls: { ...tls, serverName: undefined } })), rejectsWith('TEMPORAL_UNREACHABLE'));
      // Without a client certificate the server does not take the handshake.
      await assert.rejects(leanSandboxStatus('sbx-1', options(server.address, { tls: { ...tls, certPath: undefined, keyPath: undefined } })), rejectsWith('TEMPORAL_UNREACHABLE'));
      assert.deepEqual(clients, ['lean-status-client']);
    } finally {
      await server.close();
    }
  });
});
