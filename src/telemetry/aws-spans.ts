import type { Attributes } from '@opentelemetry/api';
import { inClientSpan } from './spans';

type Handler = (args: unknown) => Promise<unknown>;
interface MiddlewareContext {
  readonly clientName?: string;
  readonly commandName?: string;
}

/** The attributes of one AWS API call, as OpenTelemetry's conventions name them. */
export function awsCallAttributes(service: string, method: string): Attributes {
  return { 'rpc.system': 'aws-api', 'rpc.service': service, 'rpc.method': method };
}

/**
 * Makes every command `client` sends one span, `aws <Service> <Operation>` (DESIGN §17),
 * under whatever span is active (the activity's). Returns the client.
 */
export function withAwsSpans<T extends { middlewareStack: { add: (...args: never[]) => void } }>(client: T): T {
  const middleware = (next: Handler, context: MiddlewareContext) => (args: unknown) => {
    const service = (context.clientName ?? 'AWS').replace(/Client$/, '');
    const method = (context.commandName ?? 'call').replace(/Command$/, '');
    return inClientSpan(`aws ${service} ${method}`, awsCallAttributes(service, method), () => next(args));
  };
  (client.middlewareStack.add as (middleware: unknown, options: { step: string; name: string }) => void)(middleware, { step: 'initialize', name: 'sandboxplaneSpans' });
  return client;
}
