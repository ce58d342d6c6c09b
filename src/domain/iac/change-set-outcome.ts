/**
 * What a change set's execution status says of an execution (CloudFormation's
 * `ExecutionStatus`): not yet (`available`), under way or done (`already`), or impossible
 * (`failed`, with why). Pure: the step that executes reads it before and after its call,
 * so a retried step never executes twice.
 */
export function executionOutcome(status: string | undefined, reason: string | undefined): 'available' | { outcome: 'already' } | { outcome: 'failed'; error: string } {
  switch (status) {
    case 'AVAILABLE':
      return 'available';
    case 'EXECUTE_IN_PROGRESS':
    case 'EXECUTE_COMPLETE':
    case 'EXECUTE_FAILED':
      return { outcome: 'already' };
    case 'OBSOLETE':
      return { outcome: 'failed', error: 'the change set is obsolete: the stack changed after it was made' };
    case 'UNAVAILABLE':
      // CloudFormation's "no changes": nothing to execute, and the stack is checked all the same.
      return { outcome: 'already' };
    default:
      return { outcome: 'failed', error: `the change set cannot be executed (${status ?? 'no status'}${reason ? `: ${reason}` : ''})` };
  }
}
