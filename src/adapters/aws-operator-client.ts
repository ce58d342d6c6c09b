import { withAwsSpans } from '../telemetry/aws-spans';
import type { IacAccess } from './cloud-emulator-adapter';

/**
 * The AWS SDK clients the plane calls an IaC place with, as itself (DESIGN §14): one home
 * for how they are made, closed, and how their answers read (absent, forbidden).
 */

/** The settings an AWS SDK client constructor takes here. */
export interface OperatorClientSettings {
  endpoint?: string;
  region: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  profile?: string;
  maxAttempts: number;
}

type WithMiddleware = { middlewareStack: { add: (...args: never[]) => void } };

/**
 * The settings of an AWS SDK client that calls the emulator as the plane (the operator
 * headers of {@link IacAccess}); the credentials sign nothing moto checks on that path.
 */
export function operatorClient<T extends WithMiddleware>(make: (settings: OperatorClientSettings) => T, access: IacAccess): T {
  const client = withAwsSpans(
    make({
      ...(access.endpoint === undefined ? {} : { endpoint: access.endpoint }),
      region: access.region,
      // A target's key comes from the SDK's chain inside this process and never leaves it.
      ...(access.signer.kind === 'operator'
        ? { credentials: { accessKeyId: 'sandboxplane-operator', secretAccessKey: 'not-a-secret' } }
        : access.signer.profile === undefined
          ? {}
          : { profile: access.signer.profile }),
      maxAttempts: 2,
    }),
  );
  const headers = access.headers;
  if (Object.keys(headers).length > 0) {
    const addHeaders = (next: (args: { request: unknown }) => Promise<unknown>) => async (args: { request: unknown }) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers !== undefined) Object.assign(request.headers, headers);
      return next(args);
    };
    (client.middlewareStack.add as unknown as (middleware: unknown, options: { step: string; name: string }) => void)(addHeaders, { step: 'build', name: 'sandboxplaneOperatorHeaders' });
  }
  return client;
}

/** Makes an operator client with `make`, hands it to `use`, and closes it whatever `use` did. */
export function withClient<C extends WithMiddleware & { destroy(): void }, R>(make: (settings: OperatorClientSettings) => C, access: IacAccess, use: (client: C) => Promise<R>): Promise<R> {
  const client = operatorClient(make, access);
  return use(client).finally(() => client.destroy());
}

/** The name of an SDK error (its exception type), or `Error`. */
export function errorName(err: unknown): string {
  return typeof err === 'object' && err !== null && 'name' in err ? String((err as { name: unknown }).name) : 'Error';
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** 404-like answers: the thing is not there. */
export function isAbsent(err: unknown): boolean {
  return /NotFound|NoSuch|NonExistent|DoesNotExist|ParameterNotFound|ResourceNotFoundException/i.test(errorName(err)) || httpStatus(err) === 404;
}

/** The caller may not look: the thing may well be there. */
export function isForbidden(err: unknown): boolean {
  return httpStatus(err) === 403 || /AccessDenied|Unauthorized|Forbidden/i.test(errorName(err));
}

/** The service failed (HTTP 5xx) after the SDK's own retry: it cannot answer for the thing now. */
export function isServerFault(err: unknown): boolean {
  const status = httpStatus(err);
  return status !== undefined && status >= 500;
}

/** Whether `probe` finds the thing: absent is `false`, forbidden is `true`, anything else is thrown. */
export async function exists(probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (err) {
    if (isAbsent(err)) return false;
    // Forbidden is somebody's: on a real account a bucket name another account holds answers 403.
    if (httpStatus(err) === 403) return true;
    throw err;
  }
}
