import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { workflowIdFor } from '../src/domain/contract-names';
import { PLANE_LABEL, SANDBOX_ID_LABEL } from '../src/domain/docker-labels';
import { isTerminal } from '../src/domain/sandbox-states';
import type { SandboxStatus } from '../src/domain/lifecycle-messages';
import { dockerClient } from '../test/harness/container-events';
import { BENCH_PRINCIPAL, type Figure } from './bench-context';
import { withBenchWorker } from './bench-worker';
import { latency, ratioOf } from './bench-report';
import { median, rounded, sleep } from './measure';
import { rawMotoRun } from './raw-moto-run';

const TARGET_SECONDS = 15;
const POLL_MS = 100;
/** Past the health watch's safety net (10 minutes) nothing would come: give up well before. */
const GIVE_UP_MS = 120_000;

/** What the workflow did after the kill, from its history: ms after the kill for each step. */
async function recoveryTimeline(client: Client, sandboxId: string, killedAtEpochMs: number): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowIdFor(sandboxId)).fetchHistory();
  const names = new Map<string, string>();
  const steps: string[] = [];
  for (const event of history.events ?? []) {
    const at = Number(event.eventTime?.seconds ?? 0) * 1000 + Math.round((event.eventTime?.nanos ?? 0) / 1e6) - killedAtEpochMs;
    if (at < 0) continue;
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) names.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    const label =
      event.workflowExecutionSignaledEventAttributes?.signalName ??
      (scheduled ? `${scheduled.activityType?.name ?? '?'} scheduled` : undefined) ??
      (event.activityTaskCompletedEventAttributes ? `${names.get(String(event.activityTaskCompletedEventAttributes.scheduledEventId)) ?? '?'} completed` : undefined) ??
      (event.activityTaskFailedEventAttributes ? `${names.get(String(event.activityTaskFailedEventAttributes.scheduledEventId)) ?? '?'} failed` : undefined);
    if (label !== undefined) steps.push(`${label} +${at} ms`);
  }
  return steps;
}

/** One kill: how long until the sandbox was READY on a new emulator, or had ended. */
interface DeadRound {
  readonly ms: number;
  readonly outcome: 'restarted' | 'ended' | 'timed out';
  readonly state: string;
}

/**
 * DEAD (issue 30): a READY moto sandbox's container is killed (`docker kill`, as an OOM
 * kill or a crash would end it) and the sandbox's status is polled until it is READY
 * again on a restarted emulator (its health shows one restart more) or has ended.
 * The engine's die event, followed by the docker worker, tells the workflow at once; the
 * baseline is a raw start of the same image until moto answers (P2's raw run), in the same
 * rounds: the emulator start the restart cannot avoid.
 */
export const deadEmulator: Figure = {
  id: 'DEAD',
  title: 'a dead emulator noticed and replaced',
  needs: ['moto'],
  async run(context) {
    const { dockerHost, motoImage } = context.docker;
    if (dockerHost === undefined || motoImage === undefined) throw new Error('DEAD runs only with an engine and the moto image');
    const docker = dockerClient(dockerHost);
    return withBenchWorker(context, 'dead', { moto: true }, async (started) => {
      const planeId = started.plane.planeId;
      const rounds: DeadRound[] = [];
      const rawMs: number[] = [];
      const failures: string[] = [];
      let timeline: string[] = [];
      for (let round = 0; round < context.options.deadRounds; round += 1) {
        const id = `dead-${context.runId}-${round}`;
        context.progress(`DEAD: round ${round + 1} of ${context.options.deadRounds}`);
        rawMs.push((await rawMotoRun(docker, motoImage, context.runId)).totalMs);
        const ready = await started.sandboxes.create({ id, principal: BENCH_PRINCIPAL, adapter: 'moto', services: ['s3'], ttlSeconds: 600 }, { wait: 'ready' });
        const containers = await docker.listContainers({ filters: { label: [`${PLANE_LABEL}=${planeId}`, `${SANDBOX_ID_LABEL}=${id}`], status: ['running'] } });
        const target = containers[0];
        if (containers.length !== 1 || target === undefined) throw new Error(`sandbox ${id} should have one running container, found ${containers.length}`);
        const killedAtEpochMs = Date.now();
        const killedAt = performance.now();
        await docker.getContainer(target.Id).kill();
        let status: SandboxStatus = ready;
        let outcome: DeadRound['outcome'] = 'timed out';
        while (performance.now() - killedAt < GIVE_UP_MS) {
          status = await started.sandboxes.status(id);
          if (isTerminal(status.state)) outcome = 'ended';
          else if (status.state === 'READY' && status.health.restarts > ready.health.restarts) outcome = 'restarted';
          if (outcome !== 'timed out') break;
          await sleep(POLL_MS);
        }
        rounds.push({ ms: performance.now() - killedAt, outcome, state: status.state });
        timeline = await recoveryTimeline(started.client, id, killedAtEpochMs);
        if (outcome !== 'restarted') failures.push(`${id}: ${outcome === 'ended' ? `ended ${status.state}` : `not READY again within ${GIVE_UP_MS / 1000} s`} (${status.waitingFor})`);
        if (!isTerminal(status.state)) {
          const destroyed = await started.sandboxes.destroy(id);
          if (destroyed.state !== 'DESTROYED') failures.push(`destroy ${id}: ended ${destroyed.state}`);
        }
      }
      const measuredMs = median(rounds.map((round) => round.ms));
      const baselineMs = median(rawMs);
      return {
        rows: [
          {
            key: 'DEAD',
            measured: latency(
              'container killed → READY on a new emulator',
              rounds.map((round) => round.ms),
            ),
            baseline: latency('docker run + health poll', rawMs),
            ratio: ratioOf(measuredMs, baselineMs),
            target: { text: `<= ${TARGET_SECONDS} s`, reached: rounds.every((round) => round.outcome === 'restarted') && measuredMs <= TARGET_SECONDS * 1000 },
            detail:
              `${rounds.length} rounds, medians (each ${rounds.map((round) => `${(round.ms / 1000).toFixed(1)} s ${round.outcome}`).join(', ')}); ` +
              `the baseline is a raw start of the moto image before each round`,
            data: { roundsMs: rounds.map((round) => rounded(round.ms)), outcomes: rounds.map((round) => round.outcome), rawMs: rawMs.map((ms) => rounded(ms)) },
          },
        ],
        profile: { lastRoundTimeline: timeline },
        lifecycleFailures: failures.length,
        failures,
      };
    });
  },
};
