/**
 * `work` for each of `items`, at most `limit` at once, in no order; the results in the
 * order of `items`. `work` should not throw (a throw rejects the whole, with the others
 * still running): callers that must go on past a failure turn it into a result.
 */
export async function inParallel<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return results;
}
