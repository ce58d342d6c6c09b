import { SandboxPlaneError } from '../domain/errors';
import type { RuntimeHandle } from '../domain/lifecycle-record';
import { SERVICE_CATALOGS } from '../domain/service-catalog';
import type { ContainerUsage } from '../domain/usage';
import { z } from 'zod';
import type { CapturedState, CloudEmulatorAdapter, DestroyReport, HealthReport, LaunchPlan, ProvisionRequest, ResourceListing, ResourceRef } from './cloud-emulator-adapter';

/** A memory sandbox's state as a snapshot keeps it: its resources. */
const memoryStateSchema = z.object({ resources: z.array(z.object({ service: z.string(), type: z.string(), id: z.string() }).passthrough()) }).strict();

const REGION = 'us-east-1';

/**
 * In-process stand-in for an emulator, for tests of the workflow logic (DESIGN §4).
 * It holds its sandboxes in a map and exposes nothing on the network.
 */
export class MemoryAdapter implements CloudEmulatorAdapter {
  readonly name = 'memory' as const;
  readonly catalog = SERVICE_CATALOGS.memory;
  /** It runs in the worker's own process: no container holds host memory. */
  readonly memoryBytes = 0;
  readonly memoryRequestBytes = 0;
  private readonly sandboxes = new Map<string, { services: readonly string[]; resources: ResourceRef[] }>();

  launchPlan(request: ProvisionRequest): LaunchPlan {
    return {
      adapter: this.name,
      sandboxId: request.sandboxId,
      services: [...request.services],
      region: REGION,
      environment: {},
      labels: { ...request.labels },
    };
  }

  async provision(plan: LaunchPlan): Promise<RuntimeHandle> {
    if (!this.sandboxes.has(plan.sandboxId)) this.sandboxes.set(plan.sandboxId, { services: plan.services, resources: [] });
    return {
      endpoint: `memory://${plan.sandboxId}`,
      region: REGION,
      runtimeIds: [`memory-${plan.sandboxId}`],
    };
  }

  async health(sandboxId: string): Promise<HealthReport> {
    const sandbox = this.sandboxes.get(sandboxId);
    return {
      healthy: sandbox !== undefined,
      registeredServices: sandbox?.services ?? [],
      readyServices: (sandbox?.services ?? []).filter((service) => this.catalog[service]?.fidelity !== 'UNAVAILABLE'),
      detail: sandbox === undefined ? 'no such sandbox' : 'in memory',
    };
  }

  async listResources(sandboxId: string, services: readonly string[]): Promise<ResourceListing> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (sandbox === undefined) {
      throw new SandboxPlaneError('RESOURCE_DISCOVERY_FAILED', `this worker holds no memory sandbox ${sandboxId} (memory sandboxes do not survive a restart)`);
    }
    // Named like the container emulators name them, so workflow tests see the same shape.
    const unavailable = services.filter((service) => this.catalog[service]?.fidelity === 'UNAVAILABLE');
    return {
      resources: sandbox.resources.filter((resource) => services.includes(resource.service) && !unavailable.includes(resource.service)),
      unlisted: unavailable.map((service) => ({ service, kind: 'unavailable' as const, reason: `${service} is UNAVAILABLE here: ${this.catalog[service]?.note ?? ''}` })),
    };
  }

  /** No container runs: nothing to read (its sandboxes accrue live seconds only). */
  async usage(): Promise<readonly ContainerUsage[]> {
    return [];
  }

  async destroy(sandboxId: string): Promise<DestroyReport> {
    const existed = this.sandboxes.delete(sandboxId);
    return { removed: existed ? [`memory-${sandboxId}`] : [], remaining: [] };
  }

  // Nothing can hold callers off here: a capture asked to hold one captures without it.
  async captureState(sandboxId: string): Promise<CapturedState> {
    return { state: JSON.stringify({ resources: this.held(sandboxId).resources }) };
  }

  async restoreState(sandboxId: string, state: string): Promise<undefined> {
    const parsed = memoryStateSchema.safeParse(parseJson(state));
    if (!parsed.success) throw new SandboxPlaneError('SNAPSHOT_UNSUPPORTED', "the snapshot is not a memory sandbox's state");
    this.held(sandboxId).resources = parsed.data.resources as ResourceRef[];
    return undefined;
  }

  private held(sandboxId: string): { services: readonly string[]; resources: ResourceRef[] } {
    const sandbox = this.sandboxes.get(sandboxId);
    if (sandbox === undefined) throw new SandboxPlaneError('RESOURCE_DISCOVERY_FAILED', `this worker holds no memory sandbox ${sandboxId} (memory sandboxes do not survive a restart)`);
    return sandbox;
  }

  /** Ids of the sandboxes this adapter holds now (tests read it). */
  liveSandboxIds(): string[] {
    return [...this.sandboxes.keys()];
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
