import type { Command } from 'commander';
import { loadConfig } from '../../config/config';
import { approverNameSchema } from '../../domain/store-commands';
import { parseCliArgument } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatApproverList } from '../format/policy-format';
import { printResult } from '../output';
import { withStoreClient } from '../store-client-session';

/** approvers add, list, remove: who may approve or deny requests. */
export function registerApproverCommands(program: Command): void {
  const approvers = program
    .command('approvers')
    .description('the people who may approve or deny sandboxes AWAITING_APPROVAL (never their own requests)');

  approvers
    .command('add')
    .description('add an approver (adding one twice keeps the first record)')
    .argument('<name>', 'the name they will pass as --approver (or as "approver" in the UI signal)')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(approverNameSchema, args[0], 'NAME');
        const approver = await withStoreClient(loadConfig(), (store) => store.addApprover(name));
        printResult({ json: raw.json === true }, approver, `Approver ${approver.name} is listed (since ${approver.addedAt}).`);
      }),
    );

  approvers
    .command('list')
    .description('every listed approver, by name')
    .addOption(jsonOption())
    .action(
      action(async (raw) => {
        const list = await withStoreClient(loadConfig(), (store) => store.listApprovers());
        printResult({ json: raw.json === true }, { approvers: list }, formatApproverList(list));
      }),
    );

  approvers
    .command('remove')
    .description('remove an approver; their later approvals and denials are ignored')
    .argument('<name>', 'a listed approver')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(approverNameSchema, args[0], 'NAME');
        const removed = await withStoreClient(loadConfig(), (store) => store.removeApprover(name));
        printResult({ json: raw.json === true }, removed, `Approver ${removed.name} is no longer listed.`);
      }),
    );
}
