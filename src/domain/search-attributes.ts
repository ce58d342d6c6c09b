import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Search attributes of DESIGN §11: what the UI filters on and the sweep queries. */
export const SandboxState = defineSearchAttributeKey('SandboxState', SearchAttributeType.KEYWORD);
export const SandboxPrincipal = defineSearchAttributeKey('SandboxPrincipal', SearchAttributeType.KEYWORD);
export const SandboxCapability = defineSearchAttributeKey('SandboxCapability', SearchAttributeType.KEYWORD);
export const SandboxExpiresAt = defineSearchAttributeKey('SandboxExpiresAt', SearchAttributeType.DATETIME);

/** The docker host a sandbox was placed on (DESIGN §10). */
export const SandboxHost = defineSearchAttributeKey('SandboxHost', SearchAttributeType.KEYWORD);

/** An IaC run's state, and what it changes: `sandbox:<id>` (or `target:<name>`) — how the UI finds a sandbox's runs (DESIGN §14). */
export const IacState = defineSearchAttributeKey('IacState', SearchAttributeType.KEYWORD);
export const IacTarget = defineSearchAttributeKey('IacTarget', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_KEYS = Object.freeze([SandboxState, SandboxPrincipal, SandboxCapability, SandboxExpiresAt, SandboxHost, IacState, IacTarget]);
