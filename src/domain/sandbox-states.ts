/** The states of DESIGN §11, in lifecycle order. */
export const SANDBOX_STATES = ['REQUESTED', 'AWAITING_APPROVAL', 'PROVISIONING', 'READY', 'PAUSED', 'DESTROYING', 'DESTROYED', 'DENIED', 'EXPIRED', 'FAILED', 'DESTROY_FAILED'] as const;

export type SandboxState = (typeof SANDBOX_STATES)[number];

const TERMINAL = ['DESTROYED', 'DENIED', 'EXPIRED', 'FAILED', 'DESTROY_FAILED'] as const satisfies readonly SandboxState[];

/** A state a sandbox never leaves. */
export type TerminalState = (typeof TERMINAL)[number];

/** States a sandbox never leaves. */
export const TERMINAL_STATES: ReadonlySet<SandboxState> = new Set(TERMINAL);

/** End states that are not a success: a caller waiting for the sandbox gets an error with the reason. */
export const UNSUCCESSFUL_END_STATES: ReadonlySet<SandboxState> = new Set(TERMINAL.filter((state) => state !== 'DESTROYED'));

/**
 * States that count against a principal's concurrency quota: everything that holds or
 * may soon hold a runtime while its workflow runs. An ended workflow never holds quota
 * (DESTROY_FAILED leftovers are the sweep's to remove, not the principal's to carry).
 * A PAUSED sandbox holds no container, but it is still the principal's: it may resume.
 */
export const LIVE_STATES: readonly SandboxState[] = ['REQUESTED', 'AWAITING_APPROVAL', 'PROVISIONING', 'READY', 'PAUSED', 'DESTROYING'];

export function isTerminal(state: SandboxState): boolean {
  return TERMINAL_STATES.has(state);
}
