/** One thing a sandbox holds, as its emulator reports it (a bucket, a table, a queue). */
export interface ResourceRef {
  readonly service: string;
  readonly type: string;
  readonly id: string;
}
