import type Docker from 'dockerode';
import type { SandboxPlaneError } from '../domain/errors';
import { planeMetrics } from '../telemetry/plane-metrics';
import { inClientSpan } from '../telemetry/spans';
import type { BrokerLogger } from './broker-logger';
import { engineMessage, engineStatusCode, mapEngineError } from './engine-errors';

/** What an engine call is about: logged with it; `containerId` and `image` also name its mapped failure. */
export type CallContext = Readonly<Record<string, unknown>> & { readonly containerId?: string; readonly image?: string };

/** What a call asks of the engine, through the one client. */
type EngineFn<T> = (docker: Docker) => Promise<T>;

/** The caller's outcome for an answer it expects, or `undefined` to let the call fail after all. */
type Absorb<A> = (status: number, err: unknown) => A | undefined;

/** What a span of an engine call says: the operation and the container or image, nothing secret. */
function spanAttributes(operation: string, context: CallContext): Record<string, string> {
  const attributes: Record<string, string> = { 'docker.operation': operation };
  for (const [key, name] of Object.entries({ containerId: 'container.id', image: 'container.image.name', name: 'container.name' })) {
    if (typeof context[key] === 'string') attributes[name] = context[key];
  }
  return attributes;
}

/**
 * The one way the broker's parts reach the engine: each call logged before and after with
 * its context, one span and one timing (DESIGN §17), and its failure mapped to the taxonomy.
 * Shared by the containers and the sandbox networks, so both read the same in logs and traces.
 */
export class EngineCalls {
  constructor(
    readonly docker: Docker,
    /** The engine's address as DOCKER_HOST spells it, for logs and messages. */
    readonly endpoint: string,
    readonly logger: BrokerLogger,
  ) {}

  /**
   * {@link call}, its failure mapped to the taxonomy (naming the context's container id, when it
   * has one) unless `absorb` turns that answer of `harmless` into the caller's outcome.
   */
  async mapped<T, A = never>(operation: string, context: CallContext, fn: EngineFn<T>, harmless: readonly number[] = [], absorb: Absorb<A> = () => undefined): Promise<T | A> {
    try {
      return await this.call(operation, context, fn, harmless);
    } catch (err) {
      const status = engineStatusCode(err);
      const absorbed = status !== undefined && harmless.includes(status) ? absorb(status, err) : undefined;
      if (absorbed === undefined) throw this.mapError(err, operation, context);
      return absorbed;
    }
  }

  mapError(err: unknown, operation: string, context: CallContext): SandboxPlaneError {
    return mapEngineError(err, {
      operation,
      endpoint: this.endpoint,
      ...(context.containerId === undefined ? {} : { containerId: context.containerId }),
      ...(context.image === undefined ? {} : { image: context.image }),
    });
  }

  /**
   * One engine call, logged before and after (reads at debug level). Answers listed in
   * `harmless` are the caller's to absorb, so they are logged at info, not warn.
   */
  async call<T>(operation: string, context: CallContext, fn: EngineFn<T>, harmless: readonly number[] = []): Promise<T> {
    const read = operation === 'inspect' || operation === 'list' || operation === 'info' || operation === 'stats';
    const log = (obj: object, msg: string) => (read ? this.logger.debug?.(obj, msg) : this.logger.info(obj, msg));
    // One span and one timing per engine call (DESIGN §17), under the activity that made it.
    const outcome = await inClientSpan(`docker ${operation}`, spanAttributes(operation, context), async (span): Promise<{ result: T } | { harmless: unknown }> => {
      const started = Date.now();
      const timed = planeMetrics.dockerCall(operation);
      log({ ...context, operation, endpoint: this.endpoint }, `docker ${operation}`);
      try {
        const result = await fn(this.docker);
        timed('ok');
        const containerId = (result as { id?: unknown } | null)?.id;
        if (typeof containerId === 'string' && operation === 'create') span.setAttribute('container.id', containerId);
        log({ ...context, ...(typeof containerId === 'string' && operation === 'create' ? { containerId } : {}), operation, ms: Date.now() - started }, `docker ${operation} done`);
        return { result };
      } catch (err) {
        const statusCode = engineStatusCode(err);
        const fields = { ...context, operation, ms: Date.now() - started, err: engineMessage(err), statusCode };
        if (statusCode !== undefined && harmless.includes(statusCode)) {
          // The caller absorbs it (a 404 on a remove): an answer, not a failed call.
          timed('ok');
          span.setAttribute('http.response.status_code', statusCode);
          this.logger.info(fields, `docker ${operation} answered ${statusCode}`);
          return { harmless: err };
        }
        timed('error');
        this.logger.warn(fields, `docker ${operation} failed`);
        throw err;
      }
    });
    if ('harmless' in outcome) throw outcome.harmless;
    return outcome.result;
  }
}
