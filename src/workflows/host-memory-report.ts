import type { HostMemoryReport } from '../domain/hosts';
import { askLiveHosts } from './ask-live-hosts';

/** Asks every live docker host how much memory this plane's containers on it use now (`sandboxctl hosts`, DESIGN §12). */
export async function hostMemoryReport(): Promise<HostMemoryReport> {
  const { answers, unanswered } = await askLiveHosts('readMemoryInUse');
  return { hosts: answers.map(({ hostId, answer }) => ({ hostId, ...answer })), unanswered };
}
