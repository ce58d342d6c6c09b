import type { Payload, PayloadCodec } from '@temporalio/common';

/**
 * Every text a value holds (a fetched history, say): its strings, its bytes as latin-1,
 * and each payload decoded by `codec` as well, so a secret is looked for both as stored
 * and as the UI shows it through the codec server.
 */
export async function textsOf(value: unknown, codec: PayloadCodec | null | undefined): Promise<string[]> {
  const texts: string[] = [];
  const walk = async (node: unknown): Promise<void> => {
    if (node instanceof Uint8Array) texts.push(Buffer.from(node).toString('latin1'));
    else if (typeof node === 'string') texts.push(node);
    else if (Array.isArray(node)) for (const item of node) await walk(item);
    else if (node !== null && typeof node === 'object') {
      const payload = node as Payload;
      if (payload.data instanceof Uint8Array && payload.metadata !== undefined && payload.metadata !== null && codec) {
        for (const decoded of await codec.decode([payload])) texts.push(Buffer.from(decoded.data ?? new Uint8Array()).toString('utf8'));
      }
      for (const item of Object.values(node)) await walk(item);
    }
  };
  await walk(value);
  return texts;
}
