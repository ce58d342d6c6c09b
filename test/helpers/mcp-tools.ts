/** Every tool an MCP session offers an agent, by name: the stdio server and the gateway's /mcp serve the same set. */
export const MCP_TOOLS = [
  'apply_iac',
  'create_sandbox',
  'delete_snapshot',
  'destroy_sandbox',
  'extend_sandbox',
  'fork_sandbox',
  'get_sandbox',
  'iac_status',
  'list_sandboxes',
  'plan_iac',
  'sandbox_events',
  'snapshot_sandbox',
] as const;
