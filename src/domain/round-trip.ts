/** Input and result of the probe that proves a worker serves our task queue. */
export interface RoundTripInput {
  /** Who asked: `doctor`, `dev` or a test; recorded in the result and the history. */
  readonly requestedBy: string;
}

/** What a worker reports about itself when the round trip reaches it. */
export interface WorkerHealth {
  readonly workerIdentity: string;
  readonly storeSchemaVersion: number;
  readonly storeCurrent: boolean;
  readonly checkedAt: string;
}

export interface RoundTripResult extends WorkerHealth {
  readonly requestedBy: string;
  readonly workflowId: string;
}
