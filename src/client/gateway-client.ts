/**
 * The SDK over the gateway (DESIGN §18): the SandboxClient methods an agent needs, spoken
 * as HTTP with an API key instead of to Temporal. The key's principal is the caller; a
 * refusal is the same SandboxPlaneError (code, message, hint) the Temporal client throws.
 *
 * @example
 * const sandboxes = new GatewayClient({ url: 'http://127.0.0.1:8787', apiKey: process.env.SANDBOXPLANE_API_KEY! });
 * const sandbox = await sandboxes.create({ services: ['s3'], ttlSeconds: 900 }, { wait: 'ready' });
 * const s3 = new S3Client(sandbox.clientConfig!);
 */
import { z } from 'zod';
import { isErrorCode } from '../domain/error-codes';
import { SandboxPlaneError } from '../domain/errors';
import type { EventPage, EventsQuery } from '../domain/event-query';
import type { PlaneEvent } from '../domain/events';
import type { IacStatus } from '../domain/iac/iac-run';
import type { SandboxStatus } from '../domain/lifecycle-messages';
import { parseOrThrow } from '../domain/validation';
import { synthesizeCdkApp } from './cdk-synth';
import { unlessNotFound } from './client-errors';
import { followEvents, type FollowQuery } from './event-follow';
import type { IacRequest, IacWaitOptions } from './iac-client';
import type { BoundRequestInput, CreateOptions, ListFilter, SandboxSummary } from './sandbox-client';

export interface GatewayClientOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:8787`. */
  readonly url: string;
  /** An API key from `sandboxctl keys add PRINCIPAL`. */
  readonly apiKey: string;
}

const errorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), hint: z.string().optional(), runId: z.string().max(100).optional() }),
  status: z.unknown().optional(),
});

const optionsSchema = z
  .object({ url: z.string().url('must be the gateway URL, e.g. http://127.0.0.1:8787'), apiKey: z.string().min(1, 'must be an API key (sandboxctl keys add)') })
  .strict();

/** The gateway's waits are whole seconds. */
const seconds = (ms: number | undefined) => (ms === undefined ? {} : { timeoutSeconds: Math.max(1, Math.ceil(ms / 1000)) });

export class GatewayClient {
  private readonly base: string;
  private readonly apiKey: string;

  constructor(options: GatewayClientOptions) {
    const checked = parseOrThrow(optionsSchema, options, 'gateway client options');
    this.base = checked.url.replace(/\/+$/, '');
    this.apiKey = checked.apiKey;
  }

  /** Creates a sandbox as the key's principal; see SandboxClient.create (the wait `ended` is not offered over HTTP). */
  async create(input: BoundRequestInput, options: Omit<CreateOptions, 'wait'> & { wait?: 'accepted' | 'ready' } = {}): Promise<SandboxStatus> {
    return this.call<SandboxStatus>('POST', '/v1/sandboxes', { ...input, ...(options.wait !== undefined ? { wait: options.wait } : {}), ...seconds(options.timeoutMs) });
  }

  /** A sandbox's status, or `undefined` when the key's principal has none by that id. */
  async get(id: string): Promise<SandboxStatus | undefined> {
    return unlessNotFound(this.status(id));
  }

  async status(id: string): Promise<SandboxStatus> {
    return this.call<SandboxStatus>('GET', `/v1/sandboxes/${encodeURIComponent(id)}`);
  }

  /** The key's principal's sandboxes (a principal filter is the key's anyway). */
  async list(filter: Omit<ListFilter, 'principal'> = {}): Promise<SandboxSummary[]> {
    const query = new URLSearchParams();
    if (filter.state !== undefined) query.set('state', filter.state);
    if (filter.limit !== undefined) query.set('limit', String(filter.limit));
    const suffix = query.size > 0 ? `?${query}` : '';
    return (await this.call<{ sandboxes: SandboxSummary[] }>('GET', `/v1/sandboxes${suffix}`)).sandboxes;
  }

  async extend(id: string, change: { ttlSeconds: number; reason?: string }): Promise<SandboxStatus> {
    return this.call<SandboxStatus>('POST', `/v1/sandboxes/${encodeURIComponent(id)}/extend`, change);
  }

  async destroy(id: string, options: { reason?: string } = {}): Promise<SandboxStatus> {
    return this.call<SandboxStatus>('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`, options);
  }

  /** IaC in the key's principal's sandboxes: plan, apply and status, as SandboxClient.iac (a CDK app is synthesized here, on the caller's side). */
  get iac(): {
    plan: (request: IacRequest, options?: Omit<IacWaitOptions, 'wait'>) => Promise<IacStatus>;
    apply: (request: IacRequest, options?: IacWaitOptions) => Promise<IacStatus>;
    status: (runId: string) => Promise<IacStatus>;
  } {
    return {
      plan: (request, options = {}) => this.runIac('plan', request, options),
      apply: (request, options = {}) => this.runIac('apply', request, options),
      status: (runId) => this.call<IacStatus>('GET', `/v1/iac/${encodeURIComponent(runId)}`),
    };
  }

  private async runIac(mode: 'plan' | 'apply', request: IacRequest, options: IacWaitOptions): Promise<IacStatus> {
    const { sandboxId, target, cdkApp, template, principal: _principal, ...rest } = request;
    if (sandboxId === undefined || target !== undefined) {
      throw new SandboxPlaneError('INVALID_INPUT', 'sandboxId: required over the gateway, and target is not offered', {
        hint: "Name one of your sandboxes; a promotion to a target is MCP's apply_iac with target, at the gateway's /mcp.",
      });
    }
    let body: Record<string, unknown> = { ...rest, mode, ...(options.wait !== undefined ? { wait: options.wait } : {}), ...seconds(options.timeoutMs) };
    if (cdkApp !== undefined) {
      const synthesized = await synthesizeCdkApp(cdkApp, request.stack === undefined ? {} : { stack: request.stack });
      body = { ...body, template: JSON.stringify(synthesized.template), templateName: request.templateName ?? `${cdkApp} (${synthesized.stackName})` };
    } else if (template !== undefined) {
      body = { ...body, template: typeof template === 'string' ? template : JSON.stringify(template) };
    }
    return this.call<IacStatus>('POST', `/v1/sandboxes/${encodeURIComponent(sandboxId)}/iac`, body);
  }

  /** The key's principal's events, oldest first, and the cursor to read on from; see SandboxClient.events. */
  async events(query: EventsQuery = {}): Promise<EventPage> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value instanceof Date ? value.toISOString() : String(value));
    const text = params.toString();
    return this.call<EventPage>('GET', `/v1/events${text === '' ? '' : `?${text}`}`);
  }

  /** The key's principal's events as they come (each request waits at the gateway); see SandboxClient.followEvents. */
  followEvents(query: FollowQuery = {}): AsyncGenerator<PlaneEvent, void, undefined> {
    return followEvents((page) => this.events(page), query);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      throw new SandboxPlaneError('GATEWAY_UNREACHABLE', `cannot reach the gateway at ${this.base}: ${(err as Error).message}`, { cause: err });
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SandboxPlaneError('INTERNAL', `the gateway answered ${response.status} with text that is not JSON`);
    }
    if (response.ok) return parsed as T;
    const error = errorBodySchema.safeParse(parsed);
    if (!error.success || !isErrorCode(error.data.error.code)) throw new SandboxPlaneError('INTERNAL', `the gateway answered ${response.status} without an error document`);
    const { code, message, hint, runId } = error.data.error;
    const details = { ...(error.data.status !== undefined ? { status: error.data.status } : {}), ...(runId !== undefined ? { runId } : {}) };
    throw new SandboxPlaneError(code, message, { ...(hint !== undefined ? { hint } : {}), details });
  }
}
