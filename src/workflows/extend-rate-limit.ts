/** Extensions one sandbox may take per window. */
export const EXTENDS_PER_WINDOW = 10;
export const EXTEND_WINDOW_MS = 60_000;

/** When a sandbox's recent extensions were accepted: the rate limit's window, carried across runs. */
export class ExtendRateLimit {
  constructor(private timesMs: readonly number[]) {}

  carried(): readonly number[] {
    return this.timesMs;
  }

  /** `undefined` when another extension may be taken now, else why not. */
  refusal(nowMs: number): string | undefined {
    const recent = this.timesMs.filter((at) => at > nowMs - EXTEND_WINDOW_MS);
    if (recent.length < EXTENDS_PER_WINDOW) return undefined;
    return `at most ${EXTENDS_PER_WINDOW} extensions per ${EXTEND_WINDOW_MS / 1000} s for one sandbox; the next is possible after ${new Date(Math.min(...recent) + EXTEND_WINDOW_MS).toISOString()}`;
  }

  note(nowMs: number): void {
    this.timesMs = [...this.timesMs.filter((at) => at > nowMs - EXTEND_WINDOW_MS), nowMs];
  }
}
