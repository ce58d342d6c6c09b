import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { once } from 'node:events';

/** One request a receiver took. */
export interface ReceivedDelivery {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

const SCRIPT = path.join(__dirname, '..', 'fixtures', 'webhook-receiver.mjs');

/** A webhook receiver in a process of its own (test/fixtures/webhook-receiver.mjs), which a test can kill and start again on the same port. */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  private child: ChildProcess | undefined;
  port = 0;

  /** Starts it (again), on its earlier port when it had one; `delayMs` holds each answer that long. */
  async start(options: { delayMs?: number } = {}): Promise<void> {
    const env = { ...process.env, RECEIVER_PORT: String(this.port), RECEIVER_DELAY_MS: String(options.delayMs ?? 0) };
    const child = spawn(process.execPath, [SCRIPT], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    this.child = child;
    let buffered = '';
    const listening = new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the receiver exited (${code}) before listening`)));
      child.stdout?.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          if (line.startsWith('listening ')) resolve(Number(line.slice('listening '.length)));
          else if (line.trim() !== '') this.received.push(JSON.parse(line) as ReceivedDelivery);
          newline = buffered.indexOf('\n');
        }
      });
    });
    this.port = await listening;
  }

  /** Kills it outright (SIGKILL): whatever it was taking is cut off. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }

  url(pathname: string): string {
    return `http://127.0.0.1:${this.port}${pathname}`;
  }

  /** What arrived at `pathname`, parsed, in the order it arrived. */
  at(pathname: string): (ReceivedDelivery & { event: Record<string, unknown> })[] {
    return this.received.filter((delivery) => delivery.path === pathname).map((delivery) => ({ ...delivery, event: JSON.parse(delivery.body) as Record<string, unknown> }));
  }
}
