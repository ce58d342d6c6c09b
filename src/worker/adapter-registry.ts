import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { createFlociAdapter } from '../adapters/floci-adapter';
import { MemoryAdapter } from '../adapters/memory-adapter';
import { createMotoAdapter } from '../adapters/moto-adapter';
import type { EmulatorSettings } from '../config/config';
import type { ContainerBroker } from '../docker';
import { PLANE_LABEL } from '../domain/docker-labels';

/** The adapters this worker runs: memory always, moto and Floci when their image is configured. */
export function buildAdapterRegistry(settings: EmulatorSettings, broker: ContainerBroker, plane: string): AdapterRegistry {
  const common = { broker, healthTimeoutMs: settings.healthTimeoutSeconds * 1000, extraLabels: { [PLANE_LABEL]: plane }, logLimit: settings.containerLog };
  return {
    memory: new MemoryAdapter(),
    ...(settings.motoImage !== undefined ? { moto: createMotoAdapter({ ...common, image: settings.motoImage }) } : {}),
    ...(settings.flociImage !== undefined ? { floci: createFlociAdapter({ ...common, image: settings.flociImage }) } : {}),
  };
}
