import type { TemporalTlsSettings } from '../config/temporal-tls';
import { SandboxPlaneError } from '../domain/errors';

/** How long a client waits for the frontend to answer before TEMPORAL_UNREACHABLE. */
export const TEMPORAL_CONNECT_TIMEOUT_MS = 5_000;

/** A frontend at `address` that did not answer within the connect timeout, saying what else may keep it from answering. */
export function temporalUnreachable(address: string, tls: TemporalTlsSettings | undefined, reason: string, cause: unknown): SandboxPlaneError {
  return new SandboxPlaneError('TEMPORAL_UNREACHABLE', `cannot reach Temporal at ${address}${unreachableBecause(tls)}: ${reason}`, { cause });
}

/** What else may keep a frontend from answering: a certificate it wants, or TLS it does not speak. */
function unreachableBecause(tls: TemporalTlsSettings | undefined): string {
  if (tls === undefined)
    return ' (without TLS: a frontend that requires client certificates, as scripts/cluster.sh starts, answers only with SANDBOXPLANE_TEMPORAL_TLS_CERT, _KEY and _CA set)';
  return ` (with TLS, client certificate ${tls.certPath ?? 'none'}: a frontend without TLS, or one that does not trust the certificate, does not answer)`;
}
