/**
 * Generators of malformed input for the bad-input campaign (test/bad-inputs.test.ts):
 * every value here breaks at least one rule of the schema it is aimed at. The test
 * still checks each against that schema, so a generator that drifts into valid input
 * fails loudly instead of creating (or destroying) a sandbox.
 */
import fc from 'fast-check';

/** Stands for the fresh sandbox id the test fills in when it runs the input. */
export const FRESH_ID = '<fresh-id>';

/** JSON-safe values that are not objects (what a person might type into the UI's payload box). */
export const notAnObject: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.boolean(),
  fc.string({ maxLength: 12 }),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 4 })), { maxLength: 3 }),
);

/** JSON-safe values that are not strings. */
export const notAString: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.boolean(),
  fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);

/** Text of `min` to `max` characters, none of them white space (trimming cannot shorten it). */
export function longText(min: number, max: number): fc.Arbitrary<string> {
  return fc.integer({ min, max }).chain((length) => fc.constantFrom('x', 'Q', '7', 'é').map((char) => char.repeat(length)));
}

/** A short word with one character the rule forbids somewhere in it. */
function withForbidden(forbidden: readonly string[], word = fc.stringMatching(/^[a-z0-9]{0,6}$/)): fc.Arbitrary<string> {
  return fc.tuple(word, fc.constantFrom(...forbidden), word).map(([before, bad, after]) => `${before}${bad}${after}`);
}

/** Characters no principal, sandbox id or service name may hold; no NUL, so each is a valid argv entry. */
const FORBIDDEN_IN_NAMES = [' ', '!', '#', '$', '%', '"', "'", '*', ';', '\\', '\t', 'é', '日', '\u202e', '<', '>', '|', '?', '&'];

export const badPrincipal: fc.Arbitrary<string> = fc.oneof(fc.constant(''), longText(201, 260), withForbidden(FORBIDDEN_IN_NAMES));

export const badSandboxId: fc.Arbitrary<string> = fc.oneof(
  fc.constant(''),
  fc.constantFrom('UPPER', 'Sbx-1', '-leading-dash', 'under_score', 'a.b', 'a/b', 'sandbox-x/../y'),
  fc.integer({ min: 64, max: 90 }).map((length) => 'a'.repeat(length)),
  withForbidden([...FORBIDDEN_IN_NAMES, '_', '.', '/', ':', 'A']),
);

export const badServiceName: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', '   ', '-s3', 's3!', 's_3', 'S 3', 'dynamo.db'),
  fc.integer({ min: 41, max: 60 }).map((length) => 's'.repeat(length)),
  withForbidden(FORBIDDEN_IN_NAMES),
);

/** More than the 32 services a request may name. */
const tooManyServices = fc.integer({ min: 33, max: 40 }).map((count) => Array.from({ length: count }, (_, i) => `svc${i}`));

export const badServices: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant([]),
  tooManyServices,
  fc.tuple(badServiceName, fc.constantFrom([], ['s3'])).map(([bad, rest]) => [...rest, bad]),
  fc.tuple(notAString, fc.constantFrom([], ['s3'])).map(([bad, rest]) => [...rest, bad]),
  fc.oneof(fc.constant(null), fc.integer(), fc.constant('s3'), fc.constant({ s3: true })),
);

/** Not a whole, positive number of seconds up to a year. */
export const badTtlSeconds: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -1_000_000, max: 0 }),
  fc.double({ min: 0.001, max: 100_000, noNaN: true }).filter((value) => !Number.isInteger(value)),
  fc.integer({ min: 31_536_001, max: 2_000_000_000 }),
  fc.constantFrom('30m', '900', null, true, [900]),
);

const badLabels: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('Team', '', 'a b', '-x', 'ümlaut', 'k'.repeat(64)).map((key) => ({ [key]: 'v' })),
  longText(257, 300).map((value) => ({ team: value })),
  notAString.filter((value) => value !== null).map((value) => ({ team: value })),
  fc.integer({ min: 33, max: 40 }).map((count) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']))),
  fc.constantFrom(null, 'team=infra', ['team'], 7),
);

/** One broken field of a sandbox request: its name and the value that breaks it. */
const badRequestField: fc.Arbitrary<[string, unknown]> = fc.oneof(
  fc.tuple(fc.constant('id'), fc.oneof(badSandboxId, notAString)),
  fc.tuple(fc.constant('principal'), fc.oneof(badPrincipal, notAString)),
  fc.tuple(fc.constant('capability'), fc.oneof(fc.constantFrom('cloud.teleport', 'CLOUD.SANDBOX', '', 'cloud.*'), notAString)),
  fc.tuple(fc.constant('adapter'), fc.oneof(fc.constantFrom('docker', 'MOTO', '', 'localstack'), notAString)),
  fc.tuple(fc.constant('services'), badServices),
  fc.tuple(fc.constant('ttlSeconds'), badTtlSeconds),
  fc.tuple(
    fc.constant('purpose'),
    fc.oneof(
      longText(501, 700),
      notAString.filter((value) => value !== null),
    ),
  ),
  fc.tuple(fc.constant('labels'), badLabels),
  fc.tuple(fc.constantFrom('ttl', 'service', 'owner', '__proto__x', 'wait', 'Principal'), fc.string({ maxLength: 8 })),
);

/** An object that is a valid request (id {@link FRESH_ID}) but for one to three broken fields. */
export const brokenRequestObject: fc.Arbitrary<Record<string, unknown>> = fc
  .array(badRequestField, { minLength: 1, maxLength: 3 })
  .map((fields) => ({ id: FRESH_ID, principal: 'agent-bad', services: ['s3'], ...Object.fromEntries(fields) }));

/** What `SandboxClient.create` (and create_sandbox) must refuse: a broken request or no object at all. */
export const badRequest: fc.Arbitrary<unknown> = fc.oneof({ weight: 1, arbitrary: notAnObject }, { weight: 6, arbitrary: brokenRequestObject });

/**
 * Inputs of a lifecycle run started by hand (`temporal workflow start`): the workflow
 * must end each DENIED with INVALID_INPUT. A request's id is {@link FRESH_ID} (the run's
 * own id) unless the case is about the id.
 */
export const badLifecycleInput: fc.Arbitrary<unknown> = fc.oneof(
  notAnObject,
  fc.constant({}),
  notAnObject.map((request) => ({ request })),
  brokenRequestObject.map((request) => ({ request })),
  fc.constant({ request: { principal: 'agent-bad', services: ['s3'] } }),
  fc.stringMatching(/^other-[a-z0-9]{1,8}$/).map((id) => ({ request: { id, principal: 'agent-bad', services: ['s3'] } })),
  notAString.filter((value) => value !== null).map((requestDigest) => ({ request: { id: FRESH_ID, principal: 'agent-bad', services: ['s3'] }, requestDigest })),
  fc
    .oneof(notAnObject, fc.constant({}), fc.record({ step: fc.constant(-1), unrecorded: fc.constant([]) }))
    .filter((carried) => carried !== null)
    .map((carried) => ({ request: { id: FRESH_ID, principal: 'agent-bad', services: ['s3'] }, carried })),
);

/** An approver name the schema refuses. */
const badApprover: fc.Arbitrary<unknown> = fc.oneof(fc.constantFrom('', '   ', '\n\t'), longText(201, 260), notAString);

/**
 * Payloads of `approve`/`deny` that must be ignored: malformed, oversized, or well-formed
 * but from someone who may not approve (no approver is listed in the campaign's store).
 */
export const badApprovalPayload: fc.Arbitrary<unknown> = fc.oneof(
  notAnObject,
  fc.constant({}),
  badApprover.map((approver) => ({ approver })),
  fc
    .oneof(
      notAString.filter((value) => value !== null),
      longText(1001, 1200),
    )
    .map((reason) => ({ approver: 'alice', reason })),
  longText(8200, 9000).map((reason) => ({ approver: 'alice', reason })),
  fc.constantFrom('mallory', 'agent-bad', 'gated-bad').map((approver) => ({ approver, reason: 'let me in' })),
);

const oversizedPadding = longText(8200, 9000);

/** Payloads of the `extend` update that must be refused: malformed, oversized, or past the ceiling. */
export const badExtendPayload: fc.Arbitrary<unknown> = fc.oneof(
  notAnObject,
  fc.constant({}),
  badTtlSeconds.map((ttlSeconds) => ({ ttlSeconds })),
  fc
    .oneof(
      notAString.filter((value) => value !== null),
      longText(1001, 1200),
    )
    .map((reason) => ({ ttlSeconds: 60, reason })),
  fc
    .oneof(
      notAString.filter((value) => value !== null),
      longText(201, 260),
    )
    .map((actor) => ({ ttlSeconds: 60, actor })),
  oversizedPadding.map((padding) => ({ ttlSeconds: 60, padding })),
  fc.integer({ min: 7_200, max: 31_536_000 }).map((ttlSeconds) => ({ ttlSeconds })),
);

/** Payloads of the `destroy` update that must be refused (never `undefined`: that is a valid "no options"). */
export const badDestroyPayload: fc.Arbitrary<unknown> = fc.oneof(
  notAnObject,
  fc
    .oneof(
      notAString.filter((value) => value !== null),
      longText(1001, 1200),
    )
    .map((reason) => ({ reason })),
  fc
    .oneof(
      notAString.filter((value) => value !== null),
      longText(201, 260),
    )
    .map((actor) => ({ actor })),
  oversizedPadding.map((padding) => ({ padding })),
);

/** Payloads of the `decide` update: malformed ones, and well-formed ones a READY sandbox must refuse. */
export const badDecidePayload: fc.Arbitrary<unknown> = fc.oneof(
  notAnObject,
  fc.oneof(fc.constantFrom('allow', 'APPROVE', ''), notAString).map((decision) => ({ decision, approver: 'alice' })),
  badApprover.map((approver) => ({ decision: 'approve', approver })),
  oversizedPadding.map((padding) => ({ decision: 'deny', approver: 'alice', padding })),
  fc.constantFrom('approve', 'deny').map((decision) => ({ decision, approver: 'alice', reason: 'fine' })),
);

/** Payloads of the `awaitState` update: malformed ones, and another request's digest. */
export const badAwaitStatePayload: fc.Arbitrary<unknown> = fc.oneof(
  notAnObject,
  fc.constant({}),
  fc.oneof(fc.constantFrom('READY', 'done', ''), notAString).map((until) => ({ until })),
  fc.oneof(fc.integer({ min: -5, max: 0 }), fc.integer({ min: 86_401, max: 10_000_000 }), fc.constant(1.5), fc.constant('10')).map((timeoutSeconds) => ({ until: 'ready', timeoutSeconds })),
  fc.stringMatching(/^[a-z]{1,8}$/).map((key) => ({ until: 'screened', [key === 'until' ? 'extra' : key]: 1 })),
  fc.stringMatching(/^sha256:[0-9a-f]{64}$/).map((requestDigest) => ({ until: 'screened', requestDigest })),
  oversizedPadding.map((requestDigest) => ({ until: 'screened', requestDigest })),
);

/** Text for a CLI flag value that no duration parser takes (`90s`, `30m`, `2h`, `1d` are the only forms). */
const badDuration: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', '0s', '0m', '-5m', '10', '1.5h', '2 hours', 'abc', '30M', 'h', '1w', '1e3s', '1000000000s'),
  fc.stringMatching(/^[a-z]{1,6}$/),
);

/** A `sandboxctl` command line (without `--json`, which the test adds) that must fail with INVALID_INPUT. */
export function badCliInvocation(readyId: string): fc.Arbitrary<string[]> {
  const create = (flags: Record<string, string | undefined>, extra: string[] = []) => {
    const merged: Record<string, string | undefined> = { '--principal': 'agent-cli', '--services': 's3', ...flags };
    return ['create', ...Object.entries(merged).flatMap(([flag, value]) => (value === undefined ? [] : [flag, value])), ...extra];
  };
  return fc.oneof(
    badPrincipal.map((principal) => create({ '--principal': principal })),
    fc
      .oneof(
        badServiceName,
        fc.constant(','),
        fc.constant(' , '),
        tooManyServices.map((list) => list.join(',')),
      )
      .map((services) => create({ '--services': services })),
    fc.oneof(badDuration, fc.constantFrom('400d', '366d')).map((ttl) => create({ '--ttl': ttl })),
    fc.constantFrom('docker', 'MOTO', '', 'localstack').map((adapter) => create({ '--adapter': adapter })),
    fc.constantFrom('cloud.teleport', 'CLOUD.SANDBOX', '').map((capability) => create({ '--capability': capability })),
    fc
      .oneof(
        fc.constantFrom('noequals', '=v', 'Team=x', 'a b=c', ''),
        longText(257, 300).map((value) => `team=${value}`),
      )
      .map((label) => create({ '--label': label })),
    fc.oneof(badDuration, fc.constantFrom('2d', '7d', '100000000s')).map((timeout) => create({ '--timeout': timeout })),
    badSandboxId.filter((id) => !id.startsWith('-')).map((id) => create({ '--id': id })),
    longText(501, 700).map((purpose) => create({ '--purpose': purpose })),
    fc.constantFrom('--principal', '--services').map((missing) => create({ [missing]: undefined })),
    fc.constantFrom('--colour', '--force', '--ttl-seconds').map((unknown) => create({}, [unknown])),
    badSandboxId
      .filter((id) => id !== '' && !id.startsWith('-'))
      .chain((id) =>
        fc.constantFrom(
          ['status', id],
          ['audit', id],
          ['resources', id],
          ['extend', id, '--ttl', '10m'],
          ['destroy', id],
          ['approve', id, '--approver', 'alice'],
          ['deny', id, '--approver', 'alice'],
        ),
      ),
    badDuration.filter((ttl) => !ttl.startsWith('-')).map((ttl) => ['extend', readyId, '--ttl', ttl]),
    fc.constant(['extend', readyId]),
    longText(1001, 1100).chain((reason) =>
      fc.constantFrom(['extend', readyId, '--ttl', '1m', '--reason', reason], ['destroy', readyId, '--reason', reason], ['approve', readyId, '--approver', 'alice', '--reason', reason]),
    ),
    fc
      .oneof(fc.constantFrom('', '   '), longText(201, 230))
      .chain((name) =>
        fc.constantFrom(
          ['destroy', readyId, '--actor', name],
          ['extend', readyId, '--ttl', '1m', '--actor', name],
          ['approve', readyId, '--approver', name],
          ['deny', readyId, '--approver', name],
        ),
      ),
    fc.constantFrom(['approve', readyId], ['deny', readyId], ['status'], ['audit'], ['destroy']),
    fc.constantFrom('ready', 'RUNNING', 'gone', '').map((state) => ['list', '--state', state]),
    badPrincipal.filter((principal) => !principal.startsWith('-')).map((principal) => ['list', '--principal', principal]),
    fc.constantFrom('maybe', 'ALLOW', '').map((effect) => ['policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', effect]),
    fc.constantFrom('-1', 'x', '1.5', 'many').map((limit) => ['policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow', '--max-concurrent', limit]),
    badDuration.map((maxTtl) => ['policy', 'add', '--principal', 'agent-*', '--capability', 'cloud.sandbox', '--effect', 'allow', '--max-ttl', maxTtl]),
    fc.constantFrom('0', '-3', 'abc', '1.5').map((id) => ['policy', 'remove', id]),
    fc.constantFrom(['frobnicate'], ['sandbox', 'create'], ['policy', 'frob']),
    // Never a valid worker flag: a valid one would start a worker.
    fc.constantFrom('', ' ', ',', 'bogus', 'lifecycle,sotre', 'all,store').map((role) => ['worker', '--role', role]),
    fc.constantFrom('', 'Host_A', 'b.c', '-x').map((hostId) => ['worker', '--role', 'docker', '--host-id', hostId]),
    fc.constantFrom('', '0', '-1', '1.5', 'many').map((capacity) => ['worker', '--capacity', capacity]),
    fc.constantFrom('', 'Host_A', 'a.b', '-').map((hostId) => ['hosts', 'remove', hostId]),
  );
}

/** One call of an MCP tool whose arguments the tool must refuse. */
export interface BadToolCall {
  readonly name: 'create_sandbox' | 'get_sandbox' | 'list_sandboxes' | 'extend_sandbox' | 'destroy_sandbox';
  readonly arguments: Record<string, unknown>;
}

/** Arguments every tool must refuse; `readyId` names a live sandbox, so only the arguments are wrong. */
export function badToolCall(readyId: string): fc.Arbitrary<BadToolCall> {
  const call =
    (name: BadToolCall['name']) =>
    (args: Record<string, unknown>): BadToolCall => ({ name, arguments: args });
  const unknownKey = fc.constantFrom('verbose', 'actor', 'force', 'Id', 'principal');
  return fc.oneof(
    brokenRequestObject.map(call('create_sandbox')),
    fc.oneof(fc.constantFrom('ended', 'READY', 'now', ''), notAString).map((wait) => call('create_sandbox')({ principal: 'agent-mcp', services: ['s3'], wait })),
    fc
      .oneof(fc.integer({ min: -10, max: 0 }), fc.integer({ min: 3601, max: 100_000 }), fc.constant(2.5), fc.constant('50'))
      .map((timeoutSeconds) => call('create_sandbox')({ principal: 'agent-mcp', services: ['s3'], timeoutSeconds })),
    fc.oneof(badSandboxId, notAString).map((id) => call('get_sandbox')({ id })),
    unknownKey.filter((key) => key !== 'Id').map((key) => call('get_sandbox')({ id: readyId, [key]: true })),
    fc.constant(call('get_sandbox')({})),
    fc.oneof(fc.constantFrom('ready', 'RUNNING', ''), notAString).map((state) => call('list_sandboxes')({ state })),
    fc.oneof(fc.integer({ min: -5, max: 0 }), fc.integer({ min: 1001, max: 5000 }), fc.constant(1.5), fc.constant('10')).map((limit) => call('list_sandboxes')({ limit })),
    fc.oneof(badPrincipal, fc.constant(7)).map((principal) => call('list_sandboxes')({ principal })),
    unknownKey.map((key) => call('list_sandboxes')({ [key === 'principal' ? 'owner' : key]: 'x' })),
    fc.oneof(badSandboxId, notAString).map((id) => call('extend_sandbox')({ id, ttlSeconds: 60 })),
    badTtlSeconds.map((ttlSeconds) => call('extend_sandbox')({ id: readyId, ttlSeconds })),
    fc
      .oneof(
        notAString.filter((value) => value !== null),
        longText(1001, 1100),
      )
      .map((reason) => call('extend_sandbox')({ id: readyId, ttlSeconds: 60, reason })),
    unknownKey.map((key) => call('extend_sandbox')({ id: readyId, ttlSeconds: 60, [key]: 'x' })),
    fc.oneof(badSandboxId, notAString).map((id) => call('destroy_sandbox')({ id })),
    fc
      .oneof(
        notAString.filter((value) => value !== null),
        longText(1001, 1100),
      )
      .map((reason) => call('destroy_sandbox')({ id: readyId, reason })),
    unknownKey.map((key) => call('destroy_sandbox')({ id: readyId, [key]: 'x' })),
    fc.constant(call('destroy_sandbox')({ reason: 'no id' })),
  );
}
