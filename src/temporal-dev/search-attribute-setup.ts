import { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_KEYS } from '../domain/search-attributes';
import { sleep } from './frontend-probe';
import { readTemporalTls, type TemporalTlsSettings } from '../config/temporal-tls';

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;

const INDEXED_TYPE: Readonly<Partial<Record<SearchAttributeType, temporal.api.enums.v1.IndexedValueType>>> = {
  [SearchAttributeType.KEYWORD]: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.DATETIME]: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
};

/** What the namespace lacks: our attributes that are absent or registered with another type. */
export async function missingSearchAttributes(connection: Connection, namespace: string): Promise<{ missing: string[]; wrongType: string[] }> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing: string[] = [];
  const wrongType: string[] = [];
  for (const key of SEARCH_ATTRIBUTE_KEYS) {
    const registered = customAttributes?.[key.name];
    if (registered === undefined || registered === null) missing.push(key.name);
    else if (registered !== INDEXED_TYPE[key.type]) wrongType.push(key.name);
  }
  return { missing, wrongType };
}

/**
 * Adds our search attributes named in `names` (all by default) without looking first;
 * for servers that cannot list them (Temporal's time-skipping test server).
 */
export async function addSearchAttributes(connection: Connection, namespace: string, names: readonly string[] = SEARCH_ATTRIBUTE_KEYS.map((key) => key.name)): Promise<void> {
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const key of SEARCH_ATTRIBUTE_KEYS) {
    const indexed = INDEXED_TYPE[key.type];
    if (names.includes(key.name) && indexed !== undefined) searchAttributes[key.name] = indexed;
  }
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
}

/**
 * Registers the search attributes of DESIGN §11 that the namespace lacks and waits
 * until they are listed (registration is asynchronous on the server). Returns the
 * names it added; an attribute registered with another type is left for a person.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const { missing } = await missingSearchAttributes(connection, namespace);
  if (missing.length === 0) return [];
  await addSearchAttributes(connection, namespace, missing);
  for (let attempt = 0; attempt < 50; attempt += 1) {
    if ((await missingSearchAttributes(connection, namespace)).missing.length === 0) return missing;
    await sleep(200);
  }
  throw new Error(`search attributes ${missing.join(', ')} were added but never became visible in ${namespace}`);
}

/** {@link ensureSearchAttributes} over a connection of its own (mTLS when `tls` is given), for callers that have none. */
export async function ensureSearchAttributesAt(address: string, namespace: string, tls?: TemporalTlsSettings): Promise<string[]> {
  const connection = await Connection.connect({ address, ...(tls !== undefined ? { tls: readTemporalTls(tls) } : {}) });
  try {
    return await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
}
