import { request as httpRequest, Agent } from 'node:http';
import { z } from 'zod';
import { SandboxPlaneError } from '../domain/errors';

/**
 * A moto sandbox's state as moto's own recorder keeps it (DESIGN §15): the requests made
 * to it since its credentials were minted, one JSON object per line, after a first line
 * of ours saying how they were minted. Restoring resets moto, mints the same credentials
 * again from the same seed (moto's ids come from its seeded random, so the same key comes
 * back and every recorded signature checks out) and replays the requests in order.
 */

/** How a sandbox's credentials were minted: enough to mint exactly them again. */
export const mintedIdentitySchema = z
  .object({
    /**
     * moto's random seed, set just before minting: 128 random bits, in decimal (Python's
     * random takes any integer). It derives the sandbox's key, so it is as secret as the
     * key: a snapshot is sealed at rest (the store's key) and in history (the codec).
     */
    seed: z.string().regex(/^[0-9]{1,40}$/, 'must be a decimal integer'),
    /** The IAM user minted (the sandbox id of the sandbox it was minted for). */
    user: z.string().min(1).max(128),
    /** The services its policy grants. */
    services: z.array(z.string().min(1)).max(64),
  })
  .strict();
export type MintedIdentity = z.infer<typeof mintedIdentitySchema>;

const recordingHeaderSchema = z.object({ sandboxplane: mintedIdentitySchema.extend({ format: z.literal(1) }).strict() }).strict();

/** The header line a fresh recording starts with. */
export function recordingHeader(identity: MintedIdentity): string {
  return `${JSON.stringify({ sandboxplane: { format: 1, ...identity } })}\n`;
}

/** One request as moto's recorder wrote it (moto/moto_api/_internal/recorder/models.py). */
const recordedRequestSchema = z.object({
  method: z.string().regex(/^[A-Z]{3,7}$/, 'must be an HTTP method'),
  url: z.string().url(),
  headers: z.record(z.string(), z.string()),
  body: z.string().nullable().default(''),
  body_encoded: z.boolean().default(false),
});
export type RecordedRequest = z.infer<typeof recordedRequestSchema>;

/**
 * A line of ours after which moto's random was seeded afresh (a fork's own key is drawn
 * after one, so two forks of one snapshot hold different keys); a replay seeds it too.
 */
const reseedLineSchema = z.object({ sandboxplane_reseed: mintedIdentitySchema.shape.seed }).strict();

export function reseedLine(seed: string): string {
  return `${JSON.stringify({ sandboxplane_reseed: seed })}\n`;
}

/**
 * The most a recording may hold (Docker's /dev/shm is 64 MiB, counted in the container's
 * memory): past it the guard stops recording and says so with {@link OVERFLOW_LINE}, so a
 * snapshot is SNAPSHOT_TOO_LARGE while the sandbox itself goes on serving.
 */
export const RECORDING_LIMIT_BYTES = 24 * 1024 * 1024;

/** The line the guard writes when the recording passed its limit (moto-guard.ts): nothing after it was recorded. */
export const OVERFLOW_LINE = '{"sandboxplane_overflow": true}';

/** What a replay does, in order: send a recorded request, or seed moto's random. */
export type RecordedStep = { readonly request: RecordedRequest } | { readonly reseed: string };

export interface Recording {
  readonly identity: MintedIdentity;
  readonly steps: readonly RecordedStep[];
}

/**
 * The header the guard script gives a recorded call that came with the operator token
 * (an IaC apply): replayed, it carries the token again. The guard strips it from every
 * other call, so an agent cannot mark its own calls.
 */
export const RECORDED_AS_HEADER = 'X-Sandboxplane-Recorded-As';

function corrupt(problem: string): SandboxPlaneError {
  return new SandboxPlaneError('SNAPSHOT_UNSUPPORTED', `the snapshot is not a recording this plane can restore: ${problem}`);
}

function tooLarge(): SandboxPlaneError {
  return new SandboxPlaneError(
    'SNAPSHOT_TOO_LARGE',
    `the sandbox's recorded requests passed what one recording holds (${RECORDING_LIMIT_BYTES / 1024 / 1024} MiB, as the recording writes them); its state can no longer be snapshotted`,
  );
}

/** Reads a recording, refusing one that is not whole (a first line of ours, then moto's requests). */
export function parseRecording(text: string): Recording {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const [first, ...rest] = lines;
  if (first === undefined) throw corrupt('it is empty');
  const header = recordingHeaderSchema.safeParse(safeJson(first));
  if (!header.success) throw corrupt('its first line does not say how its credentials were minted');
  const { format: _format, ...identity } = header.data.sandboxplane;
  const steps = rest.map((line, index): RecordedStep => {
    if (line.trim() === OVERFLOW_LINE) throw tooLarge();
    const json = safeJson(line);
    const reseed = reseedLineSchema.safeParse(json);
    if (reseed.success) return { reseed: reseed.data.sandboxplane_reseed };
    const parsed = recordedRequestSchema.safeParse(json);
    if (!parsed.success) throw corrupt(`line ${index + 2} is not a recorded request`);
    return { request: parsed.data };
  });
  return { identity, steps };
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

/** Hop-by-hop headers and the ones a replay sets itself: never sent as recorded. */
const NOT_REPLAYED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'expect', 'content-length', RECORDED_AS_HEADER.toLowerCase()]);

export interface ReplayTarget {
  /** The container's published endpoint. */
  readonly endpoint: string;
  /**
   * Where the guard serves the plane alone while a restore runs (with the token in the
   * header): an agent's call is replayed under it and reaches moto with the path it was
   * signed for, its IAM checked as it was; a call recorded as the plane's own is sent
   * outside it, with the token, as the plane's own again.
   */
  readonly operatorPath: string;
  /** The operator header and token. */
  readonly operatorHeader: string;
  readonly operatorToken: string;
  /** Seeds moto's random afresh, writing the seed into the recording so that later replays do it too. */
  reseed(seed: string): Promise<void>;
  /** Renews the quiet of the restore: called as the replay goes. */
  keepQuiet(): Promise<void>;
}

export interface ReplayReport {
  readonly replayed: number;
  /** Calls refused or failed again (as they were when recorded: moto records before it answers). */
  readonly refused: number;
}

/**
 * Sends each recorded request to the emulator again, in order and one at a time (ids come
 * out the same only in the same order), with its recorded headers: the Host header and
 * the signature included, so moto checks each call as it did the first time, and a call
 * that failed then fails again. Only a request that gets no answer fails the replay.
 */
export async function replayRecording(target: ReplayTarget, steps: readonly RecordedStep[], progress: (done: number) => void, signal: AbortSignal): Promise<ReplayReport> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const base = new URL(target.endpoint);
  let refused = 0;
  try {
    for (const [index, step] of steps.entries()) {
      signal.throwIfAborted();
      if ('reseed' in step) {
        await target.reseed(step.reseed);
        continue;
      }
      const { request } = step;
      // A call moto refused or failed when it was made fails the same way again (moto records before it answers).
      if ((await send(agent, base, target, request, signal)) >= 400) refused += 1;
      if (index % 50 === 49) {
        progress(index + 1);
        await target.keepQuiet();
      }
    }
  } finally {
    agent.destroy();
  }
  return { replayed: steps.length, refused };
}

function send(agent: Agent, base: URL, target: ReplayTarget, recorded: RecordedRequest, signal: AbortSignal): Promise<number> {
  const url = new URL(recorded.url);
  const body = recorded.body === null ? Buffer.alloc(0) : recorded.body_encoded ? Buffer.from(recorded.body, 'base64') : Buffer.from(recorded.body, 'utf8');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(recorded.headers)) if (!NOT_REPLAYED.has(name.toLowerCase())) headers[name] = value;
  headers['Content-Length'] = String(body.length);
  const asOperator = Object.entries(recorded.headers).some(([name, value]) => name.toLowerCase() === RECORDED_AS_HEADER.toLowerCase() && value === 'operator');
  headers[target.operatorHeader] = target.operatorToken;
  const under = asOperator ? '' : target.operatorPath;
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { agent, host: base.hostname, port: base.port, method: recorded.method, path: `${under}${url.pathname}${url.search}`, headers, signal, setHost: false },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
