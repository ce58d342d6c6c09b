import type { WarmPoolReport } from '../domain/warm-pool';
import { askLiveHosts } from './ask-live-hosts';

/** Asks every live docker host about its warm pools (DESIGN §13): each host's docker worker counts its own containers. */
export async function warmPoolReport(): Promise<WarmPoolReport> {
  const { answers, unanswered } = await askLiveHosts('describeWarmPools');
  return { pools: answers.flatMap(({ answer }) => answer), unanswered };
}
