import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { createFlociAdapter } from '../adapters/floci-adapter';
import { MemoryAdapter } from '../adapters/memory-adapter';
import { StartSlots } from '../adapters/start-slots';
import { createMotoAdapter } from '../adapters/moto-adapter';
import type { EmulatorSettings } from '../config/config';
import type { ContainerBroker } from '../docker';
import { PLANE_LABEL } from '../domain/docker-labels';

/** The adapters this worker runs: memory always, moto and Floci when their image is configured. */
export function buildAdapterRegistry(settings: EmulatorSettings, broker: ContainerBroker, plane: string): AdapterRegistry {
  // One bound for the host, whichever adapter starts: moto and Floci share its CPU.
  const startSlots = new StartSlots(settings.startConcurrency);
  const common = { broker, healthTimeoutMs: settings.healthTimeoutSeconds * 1000, startSlots, extraLabels: { [PLANE_LABEL]: plane }, logLimit: settings.containerLog };
  return {
    memory: new MemoryAdapter(),
    ...(settings.motoImage !== undefined ? { moto: createMotoAdapter({ ...common, image: settings.motoImage }) } : {}),
    ...(settings.flociImage !== undefined ? { floci: createFlociAdapter({ ...common, image: settings.flociImage }) } : {}),
  };
}
