import type { Config } from '../config/config';
import { Store } from '../store';

/** Runs `work` against the SQLite projection at SANDBOXPLANE_DB, and always closes it. */
export function withStore<T>(config: Config, work: (store: Store) => T): T {
  const store = Store.open(config.storePath);
  try {
    return work(store);
  } finally {
    store.close();
  }
}
