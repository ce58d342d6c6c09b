/**
 * What a process has used, read from /proc (Linux): CPU seconds and resident memory.
 * Both benches read the processes they compare this way, so a worker, a Temporal
 * server and a bench process are measured alike.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let clockTicks: number | undefined;

function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  return clockTicks;
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
}

/** CPU seconds every process of the machine has used so far (all but idle and I/O wait): ours and anyone else's. */
export function machineBusySeconds(): number {
  const fields = (/^cpu\s+(.*)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'))?.[1] ?? '').split(/\s+/).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) / ticksPerSecond();
}

/** Resident set size of a process, in MB (MiB). */
export function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

/** CPU a set of named processes spent over a stretch of wall time. */
export interface CpuReading {
  readonly wallSeconds: number;
  /** Process name → CPU seconds spent in the stretch. */
  readonly cpuSeconds: Readonly<Record<string, number>>;
}

/**
 * Starts a CPU reading of the named processes (those without a pid are left out), and of
 * the whole machine as `machine` (whoever else runs on it shows there); the returned
 * function ends it. A process gone by then counts what it had spent when last seen.
 */
export function startCpuReading(pids: Readonly<Record<string, number | undefined>>): () => CpuReading {
  const named = Object.entries(pids).filter((entry): entry is [string, number] => entry[1] !== undefined && fs.existsSync(`/proc/${entry[1]}`));
  const before = Object.fromEntries(named.map(([name, pid]) => [name, cpuSeconds(pid)]));
  const machineBefore = machineBusySeconds();
  const started = process.hrtime.bigint();
  return () => {
    const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    const spent = Object.fromEntries(
      named.map(([name, pid]) => {
        let now = before[name] ?? 0;
        try {
          now = cpuSeconds(pid);
        } catch {
          // Exited meanwhile: what it had spent at the start is all we know.
        }
        return [name, now - (before[name] ?? 0)];
      }),
    );
    return { wallSeconds, cpuSeconds: { ...spent, machine: machineBusySeconds() - machineBefore } };
  };
}

/**
 * The pid of the `temporal server start-dev` listening on `address`'s port (the CLI runs
 * the server in its own process), found by its command line; undefined when none is.
 */
export function devServerPid(address: string): number | undefined {
  const port = address.slice(address.lastIndexOf(':') + 1);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const portFlag = argv.indexOf('--port');
    if (argv.includes('start-dev') && portFlag !== -1 && argv[portFlag + 1] === port) return Number(entry);
  }
  return undefined;
}

/** What one side of a comparison cost: per item, the CPU milliseconds of each process, and how busy each was. */
export interface CpuSummary {
  readonly items: number;
  readonly wallSeconds: number;
  readonly cpuMsPerItem: Readonly<Record<string, number>>;
  /** CPU seconds ÷ wall seconds: 1.0 is one core kept busy the whole time. */
  readonly cores: Readonly<Record<string, number>>;
}

/**
 * Adds up the CPU of the named processes over the stretches of work of each side of a
 * comparison (`roundTrip`, `lifecycle`, …), which may alternate.
 */
export class CpuTally {
  private readonly sides = new Map<string, { items: number; wallSeconds: number; cpu: Record<string, number> }>();

  constructor(private readonly pids: Readonly<Record<string, number | undefined>>) {}

  async around<T>(side: string, work: () => Promise<T>, items = 1): Promise<T> {
    const stop = startCpuReading(this.pids);
    try {
      return await work();
    } finally {
      const reading = stop();
      const total = this.sides.get(side) ?? { items: 0, wallSeconds: 0, cpu: {} };
      total.items += items;
      total.wallSeconds += reading.wallSeconds;
      for (const [name, seconds] of Object.entries(reading.cpuSeconds)) total.cpu[name] = (total.cpu[name] ?? 0) + seconds;
      this.sides.set(side, total);
    }
  }

  summary(): Record<string, CpuSummary> {
    const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;
    return Object.fromEntries(
      [...this.sides].map(([side, total]) => [
        side,
        {
          items: total.items,
          wallSeconds: round(total.wallSeconds, 2),
          cpuMsPerItem: Object.fromEntries(Object.entries(total.cpu).map(([name, seconds]) => [name, round((seconds * 1000) / total.items, 1)])),
          cores: Object.fromEntries(Object.entries(total.cpu).map(([name, seconds]) => [name, round(seconds / total.wallSeconds, 2)])),
        },
      ]),
    );
  }
}
