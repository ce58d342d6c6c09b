import { z } from 'zod';
import { clientConfigFor } from '../domain/client-config';
import { SERVICE_CATALOGS } from '../domain/service-catalog';
import type { ContainerBroker } from '../docker';
import { listThroughAwsApis } from './aws-resource-listers';
import type { HealthReport } from './cloud-emulator-adapter';
import { ContainerEmulatorAdapter } from './container-emulator';
import { fetchJson } from './health-gate';

export const MOTO_PORT = 5000;
const REGION = 'us-east-1';
const MIB = 1024 * 1024;

/** moto's own inventory endpoint: a JSON object keyed by service. */
const motoDataSchema = z.record(z.string(), z.unknown());

/** Healthy only on HTTP 200 with a JSON body from moto's own API. */
export async function motoHealthProbe(endpoint: string, signal: AbortSignal): Promise<HealthReport> {
  const answer = await fetchJson(`${endpoint}/moto-api/data.json`, signal);
  if (!answer.ok) return { healthy: false, registeredServices: [], readyServices: [], detail: answer.reason };
  const parsed = motoDataSchema.safeParse(answer.body);
  if (!parsed.success) {
    return { healthy: false, registeredServices: [], readyServices: [], detail: 'moto-api/data.json is not a JSON object' };
  }
  const catalog = SERVICE_CATALOGS.moto;
  const registeredServices = Object.keys(catalog).sort();
  return {
    healthy: true,
    registeredServices,
    readyServices: registeredServices.filter((service) => catalog[service]?.fidelity !== 'UNAVAILABLE'),
    detail: 'moto server answers',
  };
}

/** Empties every backend of a moto server (its own reset API), so a pooled server starts a sandbox clean. */
export async function resetMoto(endpoint: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST', signal });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${endpoint}/moto-api/reset answered HTTP ${response.status}`);
}

/** The user scripts/build-moto-image.sh creates for the server: the container never runs as root. */
export const MOTO_UID = 10001;

export interface MotoAdapterOptions {
  readonly broker: ContainerBroker;
  /** The image built by scripts/build-moto-image.sh, by image id (sha256:…). */
  readonly image: string;
  readonly healthTimeoutMs: number;
  readonly extraLabels?: Readonly<Record<string, string>>;
}

/** moto's server in a container of its own: the emulator we can run end to end here. */
export function createMotoAdapter(options: MotoAdapterOptions): ContainerEmulatorAdapter {
  const catalog = SERVICE_CATALOGS.moto;
  return new ContainerEmulatorAdapter({
    adapter: 'moto',
    catalog,
    broker: options.broker,
    ...(options.extraLabels !== undefined ? { extraLabels: options.extraLabels } : {}),
    image: options.image,
    containerPort: MOTO_PORT,
    region: REGION,
    memoryBytes: 512 * MIB,
    pidsLimit: 256,
    nanoCpus: 1_000_000_000,
    // scripts/build-moto-image.sh makes user moto (10001); moto keeps its state in memory.
    user: `${MOTO_UID}:${MOTO_UID}`,
    readonlyRootfs: true,
    healthTimeoutMs: options.healthTimeoutMs,
    probe: motoHealthProbe,
    environment: () => ({}),
    listResources: (endpoint, services) => listThroughAwsApis(clientConfigFor('moto', endpoint, REGION), catalog, services),
    reset: resetMoto,
  });
}
