import { clientConfigFor } from '../domain/client-config';
import { SERVICE_CATALOGS } from '../domain/service-catalog';
import type { ContainerBroker } from '../docker';
import { listThroughAwsApis } from './aws-resource-listers';
import { ContainerEmulatorAdapter } from './container-emulator';
import { flociHealthProbe } from './floci-health';
import { freeLoopbackPort } from './free-port';

export const FLOCI_PORT = 4566;
const REGION = 'us-east-1';
const MIB = 1024 * 1024;

export interface FlociAdapterOptions {
  readonly broker: ContainerBroker;
  /** Pinned: an image id (`sha256:…`) or `[host[:port]/]name@sha256:<digest>`; a tag alone is refused by the configuration. */
  readonly image: string;
  readonly healthTimeoutMs: number;
  readonly extraLabels?: Readonly<Record<string, string>>;
}

/**
 * The environment Floci starts with. FLOCI_BASE_URL is the published loopback URL,
 * or the URLs Floci writes into answers (SQS QueueUrl, pre-signed URLs) would point
 * at its internal port. Our labels go to FLOCI_DOCKER_EXTRA_LABELS_* so that any side
 * container it made would be traceable to the sandbox; it is never given an engine.
 */
export function flociEnvironment(baseUrl: string | undefined, labels: Readonly<Record<string, string>>): Record<string, string> {
  const environment: Record<string, string> = {
    FLOCI_DEFAULT_REGION: REGION,
    FLOCI_STORAGE_MODE: 'memory',
    ...(baseUrl !== undefined ? { FLOCI_BASE_URL: baseUrl } : {}),
  };
  Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .forEach(([key, value], index) => {
      environment[`FLOCI_DOCKER_EXTRA_LABELS_${index}__KEY`] = key;
      environment[`FLOCI_DOCKER_EXTRA_LABELS_${index}__VALUE`] = value;
    });
  return environment;
}

/** Floci in a container through the broker (DESIGN §4). */
export function createFlociAdapter(options: FlociAdapterOptions): ContainerEmulatorAdapter {
  const catalog = SERVICE_CATALOGS.floci;
  return new ContainerEmulatorAdapter({
    adapter: 'floci',
    catalog,
    broker: options.broker,
    ...(options.extraLabels !== undefined ? { extraLabels: options.extraLabels } : {}),
    image: options.image,
    containerPort: FLOCI_PORT,
    region: REGION,
    memoryBytes: 1024 * MIB,
    pidsLimit: 512,
    // A JVM that compiles at start: two CPUs, so its health gate is not a CPU race.
    nanoCpus: 2_000_000_000,
    healthTimeoutMs: options.healthTimeoutMs,
    probe: flociHealthProbe(catalog),
    // Floci must know its public URL at start, so the port is chosen before the run.
    hostPort: freeLoopbackPort,
    environment: ({ labels, baseUrl }) => flociEnvironment(baseUrl, labels),
    listResources: (endpoint, services) => listThroughAwsApis(clientConfigFor('floci', endpoint, REGION), catalog, services),
  });
}
