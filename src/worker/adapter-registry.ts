import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import { createFlociAdapter } from '../adapters/floci-adapter';
import { MemoryAdapter } from '../adapters/memory-adapter';
import { createMotoAdapter } from '../adapters/moto-adapter';
import type { EmulatorSettings } from '../config/config';
import type { ContainerBroker } from '../docker';

/** The adapters this worker runs: memory always, moto and Floci when their image is configured. */
export function buildAdapterRegistry(settings: EmulatorSettings, broker: ContainerBroker): AdapterRegistry {
  const healthTimeoutMs = settings.healthTimeoutSeconds * 1000;
  return {
    memory: new MemoryAdapter(),
    ...(settings.motoImage !== undefined ? { moto: createMotoAdapter({ broker, image: settings.motoImage, healthTimeoutMs }) } : {}),
    ...(settings.flociImage !== undefined ? { floci: createFlociAdapter({ broker, image: settings.flociImage, healthTimeoutMs }) } : {}),
  };
}
