import { SandboxPlaneError } from './errors';

/**
 * Operator commands (DESIGN §18: policy, approvers, hosts, targets, keys, leaks, sweeps,
 * deployments) refuse a caller bound to a principal: an agent's identity must not reach them.
 */
export function refuseUnlessOperator(principal: string | undefined, what: string): void {
  if (principal === undefined) return;
  throw new SandboxPlaneError('PRINCIPAL_MISMATCH', `${what} is an operator's command, and this caller acts as ${principal}`, {
    hint: 'Operators run it without a principal (unset SANDBOXPLANE_PRINCIPAL); agents reach the plane through the gateway (`sandboxctl gateway`) with their API key.',
  });
}
