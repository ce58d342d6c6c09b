import { z } from 'zod';
import type { HealthReport } from './cloud-emulator-adapter';
import { fetchJson } from './health-gate';
import type { ServiceCatalog } from '../domain/service-catalog';

const healthSchema = z.object({ services: z.record(z.string(), z.string()) }).passthrough();
const initSchema = z.object({ completed: z.object({ ready: z.boolean() }).passthrough() }).passthrough();

/**
 * Floci is healthy only when `/_floci/health` answers 200 with a parseable JSON
 * document (a proxy's 200 with HTML is not a live emulator) and `/_floci/init` says
 * `ready`. Floci lists Docker-backed services as running even without an engine, so
 * the report keeps what it registers apart from what can actually serve.
 */
export function flociHealthProbe(catalog: ServiceCatalog) {
  return async (endpoint: string, signal: AbortSignal): Promise<HealthReport> => {
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
    const registeredServices = Object.keys(parsedHealth.data.services).sort();

    const init = await fetchJson(`${endpoint}/_floci/init`, signal);
    if (!init.ok) return unhealthy(init.reason, registeredServices);
    const parsedInit = initSchema.safeParse(init.body);
    if (!parsedInit.success) return unhealthy(`${endpoint}/_floci/init answered JSON without completed.ready`, registeredServices);
    if (!parsedInit.data.completed.ready) return unhealthy('Floci init has not reached ready', registeredServices);

    const readyServices = registeredServices.filter((service) => {
      const entry = catalog[service];
      return entry !== undefined && entry.fidelity !== 'UNAVAILABLE';
    });
    return { healthy: true, registeredServices, readyServices, detail: `Floci ${String(parsedHealth.data.version ?? '')}`.trim() };
  };
}
