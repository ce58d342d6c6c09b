/**
 * What each adapter can offer, service by service, with an honest fidelity marker
 * (DESIGN §4). A service absent from an adapter's catalog is refused. Fidelity is
 * never guessed: without evidence a service is PARTIAL at best, and a service that
 * would need a Docker engine inside the emulator is UNAVAILABLE (admitted, reported).
 */
export const ADAPTER_NAMES = ['memory', 'moto', 'floci'] as const;
export type AdapterName = (typeof ADAPTER_NAMES)[number];

export const FIDELITY_LEVELS = ['HIGH', 'PARTIAL', 'UNAVAILABLE'] as const;
export type Fidelity = (typeof FIDELITY_LEVELS)[number];

export interface ServiceEntry {
  readonly fidelity: Fidelity;
  readonly note: string;
}

export type ServiceCatalog = Readonly<Record<string, ServiceEntry>>;

const entry = (fidelity: Fidelity, note: string): ServiceEntry => ({ fidelity, note });
const NEEDS_DOCKER = 'needs a Docker engine inside the emulator, which a sandbox never gets';

const MEMORY_CATALOG: ServiceCatalog = {
  s3: entry('PARTIAL', 'in-process stand-in for workflow tests; no AWS API'),
  sqs: entry('PARTIAL', 'in-process stand-in for workflow tests; no AWS API'),
  sns: entry('PARTIAL', 'in-process stand-in for workflow tests; no AWS API'),
  dynamodb: entry('PARTIAL', 'in-process stand-in for workflow tests; no AWS API'),
  iam: entry('PARTIAL', 'in-process stand-in for workflow tests; no AWS API'),
  lambda: entry('UNAVAILABLE', NEEDS_DOCKER),
};

const MOTO_CATALOG: ServiceCatalog = {
  s3: entry('HIGH', 'moto server; buckets, objects, versioning, presigned URLs'),
  sqs: entry('HIGH', 'moto server; standard and FIFO queues'),
  sns: entry('HIGH', 'moto server; topics, subscriptions to SQS'),
  dynamodb: entry('HIGH', 'moto server; tables, items, queries, streams'),
  sts: entry('HIGH', "moto server; GetCallerIdentity names the sandbox's own IAM user"),
  secretsmanager: entry('HIGH', 'moto server'),
  ssm: entry('HIGH', 'moto server; parameters'),
  iam: entry('PARTIAL', 'moto server; identity policies are evaluated on every request, so granting iam lets the sandbox rewrite its own'),
  kms: entry('PARTIAL', 'moto server; keys and encrypt/decrypt, simplified key policies'),
  events: entry('PARTIAL', 'moto server; rules and targets, limited delivery'),
  logs: entry('PARTIAL', 'moto server'),
  cloudformation: entry('PARTIAL', 'moto server; a subset of resource types'),
  stepfunctions: entry('PARTIAL', 'moto server; state machines without real task execution'),
  lambda: entry('UNAVAILABLE', NEEDS_DOCKER),
  rds: entry('UNAVAILABLE', 'moto models the control plane only; no database answers'),
  ecs: entry('UNAVAILABLE', NEEDS_DOCKER),
};

const FLOCI_CATALOG: ServiceCatalog = {
  s3: entry('HIGH', 'Floci, in-process'),
  sqs: entry('HIGH', 'Floci, in-process'),
  sns: entry('HIGH', 'Floci, in-process'),
  dynamodb: entry('HIGH', 'Floci, in-process (with streams)'),
  iam: entry('HIGH', 'Floci, in-process'),
  sts: entry('HIGH', 'Floci, in-process (inside its IAM service; its health map has no sts key, so readiness is probed)'),
  kms: entry('HIGH', 'Floci, in-process'),
  secretsmanager: entry('HIGH', 'Floci, in-process'),
  ssm: entry('HIGH', 'Floci, in-process'),
  events: entry('HIGH', 'Floci, in-process (EventBridge)'),
  scheduler: entry('HIGH', 'Floci, in-process (EventBridge Scheduler)'),
  apigateway: entry('HIGH', 'Floci, in-process (control plane)'),
  logs: entry('HIGH', 'Floci, in-process'),
  cloudwatch: entry('HIGH', 'Floci, in-process'),
  kinesis: entry('HIGH', 'Floci, in-process'),
  'cognito-idp': entry('HIGH', 'Floci, in-process'),
  route53: entry('HIGH', 'Floci, in-process'),
  acm: entry('HIGH', 'Floci, in-process'),
  ses: entry('HIGH', 'Floci, in-process'),
  stepfunctions: entry('PARTIAL', 'Floci, in-process (ASL execution); task states that invoke Lambda or other Docker-backed services cannot run here'),
  cloudformation: entry('PARTIAL', 'Floci, in-process (stacks, change sets); resources of Docker-backed services cannot be provisioned here'),
  lambda: entry('UNAVAILABLE', `the control plane answers, but invoking ${NEEDS_DOCKER}`),
  rds: entry('UNAVAILABLE', NEEDS_DOCKER),
  ecs: entry('UNAVAILABLE', NEEDS_DOCKER),
  eks: entry('UNAVAILABLE', NEEDS_DOCKER),
  elasticache: entry('UNAVAILABLE', NEEDS_DOCKER),
  kafka: entry('UNAVAILABLE', `MSK ${NEEDS_DOCKER}`),
  opensearch: entry('UNAVAILABLE', NEEDS_DOCKER),
  docdb: entry('UNAVAILABLE', NEEDS_DOCKER),
  mq: entry('UNAVAILABLE', NEEDS_DOCKER),
  ecr: entry('UNAVAILABLE', `the registry data plane ${NEEDS_DOCKER}`),
};

export const SERVICE_CATALOGS: Readonly<Record<AdapterName, ServiceCatalog>> = {
  memory: MEMORY_CATALOG,
  moto: MOTO_CATALOG,
  floci: FLOCI_CATALOG,
};

/** Each requested service's fidelity, or the services the adapter does not know. */
export function screenServices(adapter: AdapterName, services: readonly string[]): { fidelity: Record<string, Fidelity>; unknown: string[] } {
  const catalog = SERVICE_CATALOGS[adapter];
  const fidelity: Record<string, Fidelity> = {};
  const unknown: string[] = [];
  for (const service of services) {
    const known = Object.prototype.hasOwnProperty.call(catalog, service) ? catalog[service] : undefined;
    if (known === undefined) unknown.push(service);
    else fidelity[service] = known.fidelity;
  }
  return { fidelity, unknown };
}
