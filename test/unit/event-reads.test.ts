/**
 * Reading events (issue 40) through the store role's command activity, against a real
 * SQLite file: a principal reads its own only, another's sandbox is NOT_FOUND like one
 * that never was, cursors page without the internal order showing, and a read that waits
 * answers when the audit tap says an event of its reader's was written (not at a timer).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MAX_WAITING_READS } from '../../src/activities/event-activities';
import { createStoreCommandActivities } from '../../src/activities/store-command-activities';
import { loadConfig } from '../../src/config/config';
import { SecretBox } from '../../src/crypto/secret-box';
import { eventCursor, seqOfCursor, sinceIso, type EventPage } from '../../src/domain/event-query';
import type { OperationRecord } from '../../src/domain/lifecycle-record';
import { Store } from '../../src/store';
import type { HostDirectory } from '../../src/store/host-directory';
import { projectionSnapshot } from '../helpers/projection-row';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-event-reads-'));
const store = Store.open(path.join(dir, 'plane.sqlite'));
after(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
const { runStoreCommand } = createStoreCommandActivities({
  store,
  hosts: {} as HostDirectory,
  secrets: SecretBox.fromKeyFile(path.join(dir, 'store.key')),
  flags: loadConfig({}).flags,
});
const read = async (command: Record<string, unknown>) => (await runStoreCommand({ kind: 'events', ...command })) as EventPage;

let step = 0;
function requested(id: string, principal: string): void {
  step += 1;
  const operation: OperationRecord = { runId: 'run-1', step, action: 'requested', actor: principal, effect: 'requested', reason: null, summary: {} };
  store.sandboxes.record(projectionSnapshot({ id, principal, state: 'REQUESTED' }), operation);
}

describe('reading events (store command)', () => {
  test('since: an ISO time or a duration ago; anything else is not one', () => {
    const now = new Date('2026-12-06T17:00:00.000Z');
    assert.equal(sinceIso('10m', now), '2026-12-06T16:50:00.000Z');
    assert.equal(sinceIso('1d', now), '2026-12-05T17:00:00.000Z');
    assert.equal(sinceIso('2026-12-06T18:00:00+01:00', now), '2026-12-06T17:00:00.000Z');
    assert.equal(sinceIso('2026-12-06', now), '2026-12-06T00:00:00.000Z');
    for (const bad of ['yesterday', '10', '-5m', '2026-13-45T00:00:00Z', '1700000000', '']) assert.equal(sinceIso(bad, now), undefined, bad);
    assert.equal(seqOfCursor(eventCursor(123456)), 123456);
  });

  test("a principal reads its own; an operator everyone's; another's sandbox is NOT_FOUND in the words of one that never was", async () => {
    requested('rd-a1', 'agent-a');
    requested('rd-b1', 'agent-b');
    requested('rd-a2', 'agent-a');
    const mine = await read({ principal: 'agent-a' });
    assert.deepEqual(
      mine.events.map((e) => e.sandboxId),
      ['rd-a1', 'rd-a2'],
    );
    assert.ok(
      mine.events.every((e) => !('seq' in e)),
      'the order is carried by cursors only',
    );
    assert.deepEqual(
      (await read({})).events.map((e) => e.sandboxId),
      ['rd-a1', 'rd-b1', 'rd-a2'],
    );
    const failure = async (command: Record<string, unknown>) => {
      const err = await read(command).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, 'NOT_FOUND');
      return err.message;
    };
    const theirs = await failure({ principal: 'agent-a', sandboxId: 'rd-b1' });
    const never = await failure({ principal: 'agent-a', sandboxId: 'rd-never' });
    assert.equal(theirs.replace('rd-b1', 'ID'), never.replace('rd-never', 'ID'));
    assert.deepEqual(
      (await read({ principal: 'agent-b', sandboxId: 'rd-b1' })).events.map((e) => e.kind),
      ['sandbox.requested'],
    );
  });

  test('cursors page through in order; a short page moves past everything it saw, others’ events too', async () => {
    const first = await read({ principal: 'agent-a', limit: 1 });
    assert.deepEqual(
      first.events.map((e) => e.sandboxId),
      ['rd-a1'],
    );
    const second = await read({ principal: 'agent-a', limit: 1, after: first.next });
    assert.deepEqual(
      second.events.map((e) => e.sandboxId),
      ['rd-a2'],
    );
    requested('rd-b2', 'agent-b');
    const rest = await read({ principal: 'agent-a', after: second.next });
    assert.deepEqual(rest.events, []);
    assert.equal(seqOfCursor(rest.next), store.events.lastSeq(), 'past agent-b’s newer event: a follower does not look at it again');
    await assert.rejects(read({ after: '12' }), (err: Error & { type?: string }) => err.type === 'INVALID_INPUT');
    await assert.rejects(read({ waitSeconds: 21 }), (err: Error & { type?: string }) => err.type === 'INVALID_INPUT');
  });

  test("a waiting read answers when its reader's event is written, not for another's, and with none at the end of its wait", async () => {
    const { next } = await read({ principal: 'agent-a' });
    const started = Date.now();
    let answered: EventPage | undefined;
    const waiting = read({ principal: 'agent-a', after: next, waitSeconds: 10 }).then((page) => (answered = page));
    await new Promise((resolve) => setTimeout(resolve, 200));
    requested('rd-b3', 'agent-b');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(answered, undefined, "another principal's event does not answer it");
    requested('rd-a3', 'agent-a');
    const page = await waiting;
    assert.deepEqual(
      page.events.map((e) => e.sandboxId),
      ['rd-a3'],
    );
    assert.ok(Date.now() - started < 3000, 'at once, not at the end of the wait');

    const quiet = Date.now();
    const none = await read({ principal: 'agent-a', after: page.next, waitSeconds: 1 });
    assert.deepEqual(none.events, []);
    assert.ok(Date.now() - quiet >= 950, 'it waited');
    assert.equal(none.next, page.next);
  });

  test('past MAX_WAITING_READS reads waiting at once, the next answers at once: followers never take every store slot', async () => {
    const { next } = await read({ principal: 'agent-a' });
    const waiting = Array.from({ length: MAX_WAITING_READS }, () => read({ principal: 'agent-a', after: next, waitSeconds: 2 }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const asked = Date.now();
    const over = await read({ principal: 'agent-a', after: next, waitSeconds: 2 });
    assert.deepEqual(over.events, []);
    assert.ok(Date.now() - asked < 1000, 'answered without waiting');
    await Promise.all(waiting);
    const again = Date.now();
    await read({ principal: 'agent-a', after: next, waitSeconds: 1 });
    assert.ok(Date.now() - again >= 950, 'once they are done, a read waits again');
  });
});
