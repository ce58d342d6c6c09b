import path from 'node:path';
import { parseArgs } from 'node:util';

/** The figures of the suite (issue 15), in the order they run. */
export const FIGURE_IDS = ['P1', 'P2', 'P3', 'P4', 'P5', 'P6', 'IDLE', 'DEAD', 'CLI', 'S1', 'F5'] as const;
export type FigureId = (typeof FIGURE_IDS)[number];

/** `npm run bench -- …`, validated once: every field filled in, frozen. */
export interface BenchOptions {
  /** One JSON document on stdout; progress stays on stderr. */
  readonly json: boolean;
  /** The figures to run, in suite order. */
  readonly only: readonly FigureId[];
  /** P1: sequential memory create/destroy rounds, each beside a roundTrip. */
  readonly rounds: number;
  /** P2: alternating raw `docker run` and sandbox rounds per variant. */
  readonly motoRounds: number;
  /** P3: how many agents start a lifecycle at once, one burst per entry. */
  readonly concurrency: readonly number[];
  /** P4: managed containers seeded before each sweep, one sweep per entry. */
  readonly sweepSizes: readonly number[];
  /** P5: live memory sandboxes held by the measured worker, one reading per entry (the smaller stay live). */
  readonly live: readonly number[];
  /** P6: moto creates asked for at once (and raw runs started at once, and the warm pool's size). */
  readonly burst: number;
  /** IDLE: READY sandboxes left idle while their history and the server's CPU are read. */
  readonly idleSandboxes: number;
  /** IDLE: how long they are left idle, in seconds. */
  readonly idleSeconds: number;
  /** DEAD: rounds of killing a READY moto sandbox's container. */
  readonly deadRounds: number;
  /** CLI: alternating `sandboxctl status` and `temporal workflow describe` rounds. */
  readonly cliRounds: number;
  /** Where the measured worker processes write V8 CPU profiles (`node --cpu-prof`); none when undefined. */
  readonly cpuProfDir: string | undefined;
}

export const BENCH_USAGE = `npm run bench [-- OPTIONS]
  --json                  one JSON document on stdout (progress on stderr)
  --only P1,P3            run only these figures (${FIGURE_IDS.join(', ')})
  --rounds N              P1 rounds (default 20)
  --moto-rounds N         P2 rounds per variant (default 7)
  --concurrency 50,200    P3 concurrent agents, one burst each
  --sweep-sizes 100,500   P4 managed containers, one sweep each
  --live 100,1000         P5 live sandboxes, one reading each (default 100,1000)
  --burst N               P6 moto creates at once, cold and from a pool of N (default 50)
  --idle-sandboxes N      IDLE sandboxes left idle (default 20)
  --idle-seconds N        IDLE window in seconds (default 60)
  --dead-rounds N         DEAD rounds of killing an emulator (default 3)
  --cli-rounds N          CLI rounds (default 7)
  --cpu-prof DIR          the measured workers (P1, P3, P5, CLI) write V8 CPU profiles to DIR`;

/** Parses and checks `argv`; a bad value throws one error naming every offending flag. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      json: { type: 'boolean', default: false },
      only: { type: 'string' },
      rounds: { type: 'string' },
      'moto-rounds': { type: 'string' },
      concurrency: { type: 'string' },
      'sweep-sizes': { type: 'string' },
      live: { type: 'string' },
      burst: { type: 'string' },
      'idle-sandboxes': { type: 'string' },
      'idle-seconds': { type: 'string' },
      'dead-rounds': { type: 'string' },
      'cli-rounds': { type: 'string' },
      'cpu-prof': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) throw new BenchUsageError(BENCH_USAGE);
  const problems: string[] = [];
  const whole = (name: string, raw: string | undefined, fallback: number, minimum: number): number => {
    const value = raw === undefined ? fallback : Number(raw);
    if (Number.isInteger(value) && value >= minimum) return value;
    problems.push(`--${name} must be a whole number >= ${minimum}, got ${String(raw)}`);
    return fallback;
  };
  const list = (name: string, raw: string | undefined, fallback: readonly number[]): readonly number[] => {
    if (raw === undefined) return fallback;
    const values = raw.split(',').map((part) => Number(part.trim()));
    if (values.length > 0 && values.every((value) => Number.isInteger(value) && value >= 1)) return values;
    problems.push(`--${name} must be a comma list of whole numbers >= 1, got ${raw}`);
    return fallback;
  };
  let only: readonly FigureId[] = FIGURE_IDS;
  if (values.only !== undefined) {
    const asked = values.only.split(',').map((part) => part.trim().toUpperCase());
    const unknown = asked.filter((id) => !(FIGURE_IDS as readonly string[]).includes(id));
    if (unknown.length > 0 || asked.length === 0) problems.push(`--only takes a comma list of ${FIGURE_IDS.join(', ')}, got ${values.only}`);
    else only = FIGURE_IDS.filter((id) => asked.includes(id));
  }
  const options: BenchOptions = {
    json: values.json,
    only,
    rounds: whole('rounds', values.rounds, 20, 3),
    motoRounds: whole('moto-rounds', values['moto-rounds'], 7, 1),
    concurrency: list('concurrency', values.concurrency, [50, 200]),
    sweepSizes: list('sweep-sizes', values['sweep-sizes'], [100, 500]),
    live: list('live', values.live, [100, 1000]),
    burst: whole('burst', values.burst, 50, 1),
    idleSandboxes: whole('idle-sandboxes', values['idle-sandboxes'], 20, 1),
    idleSeconds: whole('idle-seconds', values['idle-seconds'], 60, 10),
    deadRounds: whole('dead-rounds', values['dead-rounds'], 3, 1),
    cliRounds: whole('cli-rounds', values['cli-rounds'], 7, 1),
    cpuProfDir: values['cpu-prof'] === undefined ? undefined : path.resolve(values['cpu-prof']),
  };
  if (problems.length > 0) throw new BenchUsageError(`${problems.join('\n')}\n\n${BENCH_USAGE}`);
  return Object.freeze(options);
}

/** A bad command line (or `--help`): the entry point prints it and exits 2, without a stack. */
export class BenchUsageError extends Error {
  override readonly name = 'BenchUsageError';
}
