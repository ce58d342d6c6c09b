import { z } from 'zod';
import type { HealthReport } from './cloud-emulator-adapter';
import { fetchJson } from './health-gate';
import type { ServiceCatalog } from '../domain/service-catalog';
import type { OperatorAccess } from './operator-endpoint';

const healthSchema = z.object({ services: z.record(z.string(), z.string()) }).passthrough();
const initSchema = z.object({ completed: z.object({ ready: z.boolean() }).passthrough() }).passthrough();

/** Floci's health map says `running` for an enabled service (`available` for a disabled one). */
const RUNNING = 'running';

/** How one of our services shows in Floci: under a key of its health map, or only by answering. */
export type FlociPresence = { readonly healthKey: string } | { readonly probe: (endpoint: string, signal: AbortSignal) => Promise<boolean> };

/**
 * STS answers inside Floci's IAM service but has no key of its own in the health map,
 * so it is asked: GetCallerIdentity, routed by the `sts` credential scope (Floci does
 * not check signatures by default), must come back as an STS answer.
 */
export async function flociStsAnswers(endpoint: string, signal: AbortSignal): Promise<boolean> {
  try {
    const response = await fetch(`${endpoint}/`, {
      method: 'POST',
      signal,
      headers: {
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
        authorization: 'AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: 'Action=GetCallerIdentity&Version=2011-06-15',
    });
    const text = await response.text();
    return response.status === 200 && text.includes('<GetCallerIdentityResult>');
  } catch {
    return false;
  }
}

const key = (healthKey: string): FlociPresence => ({ healthKey });

/**
 * Our service names (the catalog's, the AWS SDK's) against Floci's own: its health map
 * names Step Functions `states`, CloudWatch `monitoring`, SES `email`, OpenSearch `es`,
 * and lists no `sts` at all (seen live with Floci 1.7.0, and in its ResolvedServiceCatalog).
 * Every service of the Floci catalog has an entry; a unit test holds them together.
 */
export const FLOCI_SERVICE_PRESENCE: Readonly<Record<string, FlociPresence>> = Object.freeze({
  s3: key('s3'),
  sqs: key('sqs'),
  sns: key('sns'),
  dynamodb: key('dynamodb'),
  iam: key('iam'),
  sts: { probe: flociStsAnswers },
  kms: key('kms'),
  secretsmanager: key('secretsmanager'),
  ssm: key('ssm'),
  events: key('events'),
  scheduler: key('scheduler'),
  apigateway: key('apigateway'),
  logs: key('logs'),
  cloudwatch: key('monitoring'),
  kinesis: key('kinesis'),
  'cognito-idp': key('cognito-idp'),
  route53: key('route53'),
  acm: key('acm'),
  ses: key('email'),
  stepfunctions: key('states'),
  cloudformation: key('cloudformation'),
  lambda: key('lambda'),
  rds: key('rds'),
  ecs: key('ecs'),
  eks: key('eks'),
  elasticache: key('elasticache'),
  kafka: key('kafka'),
  opensearch: key('es'),
  docdb: key('docdb'),
  mq: key('mq'),
  ecr: key('ecr'),
});

/**
 * Floci is healthy only when `/_floci/health` answers 200 with a parseable JSON
 * document (a proxy's 200 with HTML is not a live emulator) and `/_floci/init` says
 * `ready`. The report is in our service names (see FLOCI_SERVICE_PRESENCE): registered
 * is what Floci lists or what answered, ready is registered, running and not
 * UNAVAILABLE here (Floci lists Docker-backed services as running without an engine).
 */
export function flociHealthProbe(catalog: ServiceCatalog, presence: Readonly<Record<string, FlociPresence>> = FLOCI_SERVICE_PRESENCE) {
  return async ({ endpoint }: OperatorAccess, signal: AbortSignal): Promise<HealthReport> => {
    const unhealthy = (detail: string, registeredServices: string[] = []): HealthReport => ({
      healthy: false,
      registeredServices,
      readyServices: [],
      detail,
    });
    const health = await fetchJson(`${endpoint}/_floci/health`, signal);
    if (!health.ok) return unhealthy(health.reason);
    const parsedHealth = healthSchema.safeParse(health.body);
    if (!parsedHealth.success) return unhealthy(`${endpoint}/_floci/health answered JSON without a services map`);
    const listed = parsedHealth.data.services;
    const listedState = (healthKey: string): string | undefined => (Object.hasOwn(listed, healthKey) ? listed[healthKey] : undefined);
    const byKey = Object.entries(presence).filter(([, how]) => 'healthKey' in how && listedState(how.healthKey) !== undefined);
    const registeredByKey = byKey.map(([service]) => service).sort();

    const init = await fetchJson(`${endpoint}/_floci/init`, signal);
    if (!init.ok) return unhealthy(init.reason, registeredByKey);
    const parsedInit = initSchema.safeParse(init.body);
    if (!parsedInit.success) return unhealthy(`${endpoint}/_floci/init answered JSON without completed.ready`, registeredByKey);
    if (!parsedInit.data.completed.ready) return unhealthy('Floci init has not reached ready', registeredByKey);

    const states = await Promise.all(
      Object.entries(presence).map(async ([service, how]): Promise<{ service: string; state: string | undefined }> => {
        if ('probe' in how) return { service, state: (await how.probe(endpoint, signal)) ? RUNNING : undefined };
        return { service, state: listedState(how.healthKey) };
      }),
    );
    const registeredServices = states
      .filter(({ state }) => state !== undefined)
      .map(({ service }) => service)
      .sort();
    const readyServices = states
      .filter(({ service, state }) => state === RUNNING && (catalog[service]?.fidelity ?? 'UNAVAILABLE') !== 'UNAVAILABLE')
      .map(({ service }) => service)
      .sort();
    const version = typeof parsedHealth.data.version === 'string' ? ` ${parsedHealth.data.version}` : '';
    return { healthy: true, registeredServices, readyServices, detail: `Floci${version}, ${Object.keys(listed).length} services in its health map` };
  };
}
