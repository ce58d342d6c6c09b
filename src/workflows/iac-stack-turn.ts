import { condition, getExternalWorkflowHandle, log, workflowInfo } from '@temporalio/workflow';
import type { IacPlace } from '../activities';
import { iacTargetTurnsWorkflowId, workflowIdFor } from '../domain/contract-names';
import { iacClaimAnswerSchema, type AdmittedIacRun, type IacClaimAnswer } from '../domain/iac/iac-run';
import type { AdapterName } from '../domain/service-catalog';
import type { TargetRecord } from '../domain/targets';
import { targetsQueue } from '../domain/task-queues';
import { storeActivities } from './activity-routes';
import { claimStackSignal, releaseStackSignal } from './iac-messages';
import { IacRefused } from './iac-refusal';

/** A keeper answers a claim at once; silence this long means it cannot (a sandbox ended, or of a build from before IaC). */
const CLAIM_ANSWER_WAIT_MS = 60_000;

/** Where the run's steps go once it holds the stack: the sandbox's docker host (as its lifecycle granted it), or the targets queue. */
export interface Granted {
  readonly place: IacPlace;
  readonly taskQueue: string;
}

/**
 * A run's turn at its stack (DESIGN §14: one run at a time changes a given stack): asked
 * of the sandbox's lifecycle, or of the target's keeper of turns (started by the claim if
 * none runs), answered by a signal, and given back when the run ends.
 */
export class IacStackTurn {
  private answer: IacClaimAnswer | undefined;
  private asked = false;
  private granted = false;

  constructor(
    private readonly run: AdmittedIacRun,
    private readonly target: TargetRecord | undefined,
  ) {}

  /** The keeper's answer, as its signal brings it: checked (anyone may signal a run), and a grant taken only while a claim waits for one. */
  heard(payload: unknown): void {
    const parsed = iacClaimAnswerSchema.safeParse(payload);
    if (!parsed.success) {
      log.warn('malformed stack answer ignored');
      return;
    }
    if (parsed.data.answer === 'granted' && (this.granted || !this.asked)) return;
    this.answer = parsed.data;
  }

  /** The keeper's word, after it granted the stack, that the sandbox is ending: nothing can be applied any more. */
  get ended(): Extract<IacClaimAnswer, { answer: 'refused' }> | undefined {
    const answer = this.answer;
    return this.granted && answer?.answer === 'refused' ? answer : undefined;
  }

  /**
   * Claims the stack and waits for it: granted, refused (an IacRefused), or queued behind
   * a run whose lease ends at a known time (`queued` is told; the claim is sent again then).
   */
  async claim(leaseMs: number, services: readonly string[], queued: (behind: string, leaseUntilMs: number) => void): Promise<Granted> {
    for (;;) {
      this.answer = undefined;
      await this.send(leaseMs, services);
      if (!(await condition(() => this.answer !== undefined, CLAIM_ANSWER_WAIT_MS))) {
        const why =
          this.run.sandboxId !== undefined
            ? 'a sandbox of a build from before infrastructure as code cannot: create a new sandbox'
            : 'no lifecycle worker of the current build serves the plane: `sandboxctl deployment` shows its pollers';
        throw new IacRefused('FAILED', 'INVALID_STATE', `${this.keeperText} did not answer within ${CLAIM_ANSWER_WAIT_MS / 1000} s (${why})`);
      }
      const answer = this.answer as unknown as IacClaimAnswer;
      if (answer.answer === 'refused') throw new IacRefused('FAILED', answer.code, answer.message);
      if (answer.answer === 'granted') return this.grant(answer);
      queued(answer.behind, answer.leaseUntilMs);
      // Woken by the grant when the other run ends; else asks again once the other's lease is over.
      this.answer = undefined;
      await condition(() => this.answer !== undefined, Math.max(1_000, answer.leaseUntilMs - Date.now() + 1_000));
      const next = this.answer as IacClaimAnswer | undefined;
      if (next?.answer === 'granted') return this.grant(next);
      if (next?.answer === 'refused') throw new IacRefused('FAILED', next.code, next.message);
    }
  }

  /** Gives the turn (or the run's place in line) back; a keeper that has gone has nothing to give back to. */
  async release(): Promise<void> {
    if (!this.asked) return;
    await getExternalWorkflowHandle(this.keeper)
      .signal(releaseStackSignal, { runId: this.run.runId, stack: this.run.stack })
      .catch(() => undefined);
  }

  private get keeper(): string {
    return this.run.sandboxId !== undefined ? workflowIdFor(this.run.sandboxId) : iacTargetTurnsWorkflowId(this.run.target as string);
  }

  private get keeperText(): string {
    return this.run.sandboxId !== undefined ? `sandbox ${this.run.sandboxId}` : `the turns of target ${this.run.target as string}`;
  }

  private async send(leaseMs: number, services: readonly string[]): Promise<void> {
    const { runId, stack, principal, sandboxId, target } = this.run;
    const claim = { runId, stack, principal, leaseMs, services: [...services] };
    // Asked before the signal is sent: the keeper's answer may arrive in the same activation as the send's completion.
    this.asked = true;
    if (target !== undefined) {
      // Workflow code cannot signal-with-start: the store role's activity does.
      await storeActivities().claimTargetStack({ target, taskQueue: workflowInfo().taskQueue, claim });
    } else {
      try {
        await getExternalWorkflowHandle(workflowIdFor(sandboxId as string)).signal(claimStackSignal, claim);
      } catch {
        this.asked = false;
        throw new IacRefused('FAILED', 'NOT_FOUND', `no sandbox ${sandboxId as string} (it does not exist, or it has ended)`);
      }
    }
  }

  private grant(answer: Extract<IacClaimAnswer, { answer: 'granted' }>): Granted {
    this.granted = true;
    if (this.target !== undefined) {
      const { name, region, endpoint, profile } = this.target;
      return { place: { kind: 'target', target: { name, region, endpoint, profile } }, taskQueue: targetsQueue(workflowInfo().taskQueue) };
    }
    const sandbox = answer.sandbox;
    if (sandbox === undefined) throw new IacRefused('FAILED', 'INTERNAL', `sandbox ${this.run.sandboxId as string} granted the stack without saying where it runs`);
    return {
      place: {
        kind: 'sandbox',
        sandboxId: this.run.sandboxId as string,
        adapter: sandbox.adapter as AdapterName,
        runtime: { ...sandbox.runtime, runtimeIds: [...sandbox.runtime.runtimeIds] },
      },
      taskQueue: sandbox.placement.taskQueue,
    };
  }
}
