/**
 * DESIGN §12 on the real engine at DOCKER_HOST: a container that writes a gigabyte of log
 * lines keeps at most its log limit on the host's disk, and the engine's memory (what host
 * capacity is measured against) is read from `docker info`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Docker from 'dockerode';
import { sandboxContainerLabels } from '../../src/domain/docker-labels';
import { DockerContainerBroker } from '../../src/docker';
import { MIB, TEST_IMAGE, engineDocker, removeSandboxContainers, requireEngineAndImage, uniqueSandboxId } from './docker-test-support';

const GIB = 1024 * MIB;
const LOG_MAX_BYTES = 4 * MIB;
const LOG_FILES = 2;

/**
 * Lines of 16 KiB (the engine's own line size): few log messages for a gigabyte, so the
 * json-file driver is not what takes the time. `busybox yes` repeats the line, `head -c`
 * stops it at `bytes`; then one last line says it got that far.
 */
function floodCommand(bytes: number): string[] {
  const script = ['s=0123456789abcdef', 'for i in 1 2 3 4 5 6 7 8 9 10; do s="$s$s"; done', `/bin/busybox yes "$s" | /bin/busybox head -c ${bytes}`, 'echo', 'echo flood-done'].join('; ');
  return ['/bin/busybox', 'sh', '-c', script];
}

/** The container's json-file log and its rotated files (`<id>-json.log`, `.1`, …), in bytes. */
function logFilesOnDisk(logPath: string): Array<{ name: string; bytes: number }> {
  const dir = path.dirname(logPath);
  const base = path.basename(logPath);
  return fs
    .readdirSync(dir)
    .filter((name) => name === base || name.startsWith(`${base}.`))
    .map((name) => ({ name, bytes: fs.statSync(path.join(dir, name)).size }));
}

async function waitForExit(docker: Docker, id: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = ((await docker.getContainer(id).inspect()) as unknown as { State: { Status: string; ExitCode: number } }).State;
    if (state.Status === 'exited' || state.Status === 'dead') return state.ExitCode;
    if (Date.now() > deadline) assert.fail(`the flooding container is still ${state.Status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('container log limit and engine memory, on the real engine', () => {
  const docker = engineDocker();
  const sandboxId = uniqueSandboxId('logs');
  let imageId = '';
  let broker: DockerContainerBroker;

  before(async () => {
    imageId = await requireEngineAndImage(docker);
    broker = new DockerContainerBroker({ dockerHost: process.env.DOCKER_HOST, imageAllowlist: [TEST_IMAGE] });
  });

  after(async () => {
    await removeSandboxContainers(docker, sandboxId);
  });

  test('a container that writes 1 GiB of log lines holds at most its log limit on disk', { timeout: 300_000 }, async () => {
    const started = Date.now();
    const info = await broker.run({
      image: imageId,
      labels: { ...sandboxContainerLabels(sandboxId, 'testhttp') },
      command: floodCommand(GIB),
      limits: { memoryBytes: 64 * MIB, pidsLimit: 16, nanoCpus: 1_000_000_000, logMaxBytes: LOG_MAX_BYTES, logFiles: LOG_FILES },
    });
    assert.equal(await waitForExit(docker, info.id, 280_000), 0, 'the flood ran to its end');
    const seconds = (Date.now() - started) / 1000;

    const raw = (await docker.getContainer(info.id).inspect()) as unknown as { LogPath: string; HostConfig: { LogConfig: { Type: string; Config: Record<string, string> } } };
    assert.deepEqual(raw.HostConfig.LogConfig, { Type: 'json-file', Config: { 'max-size': String(LOG_MAX_BYTES / LOG_FILES), 'max-file': String(LOG_FILES) } });
    assert.ok(raw.LogPath !== '', 'the engine names the log file');
    let files: Array<{ name: string; bytes: number }>;
    try {
      files = logFilesOnDisk(raw.LogPath);
    } catch (err) {
      assert.fail(`cannot read the engine's log files at ${raw.LogPath} (${String(err)}): this test reads the engine's data root, so it runs as root beside a local engine`);
    }
    const total = files.reduce((sum, file) => sum + file.bytes, 0);
    // A file rotates once it has passed max-size, so the newest may hold one line (16 KiB, JSON-escaped) beyond it.
    const slack = 64 * 1024;
    assert.ok(files.length >= 1 && files.length <= LOG_FILES, `at most ${LOG_FILES} files: ${JSON.stringify(files)}`);
    assert.ok(total <= LOG_MAX_BYTES + slack, `${total} bytes on disk, at most ${LOG_MAX_BYTES} + ${slack} allowed: ${JSON.stringify(files)}`);
    assert.ok(total >= LOG_MAX_BYTES / LOG_FILES, `the log was written and rotated, not dropped: ${total} bytes`);

    const tail = await docker.getContainer(info.id).logs({ stdout: true, stderr: true, tail: 2 });
    assert.match(tail.toString('latin1'), /flood-done/, 'the newest lines are kept: the whole gigabyte went through the log');
    process.stdout.write(`# 1 GiB of log lines in ${seconds.toFixed(1)} s; ${total} bytes kept in ${files.length} file(s)\n`);
  });

  test("the engine's memory is docker info's MemTotal, and this machine's when the engine runs here", async () => {
    const info = (await docker.info()) as { MemTotal: number };
    const bytes = await broker.engineMemoryBytes();
    assert.equal(bytes, info.MemTotal);
    assert.ok(bytes >= 256 * MIB, `a plausible machine: ${bytes} bytes`);
    const meminfo = fs.existsSync('/proc/meminfo') ? /^MemTotal:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/meminfo', 'utf8')) : null;
    if ((process.env.DOCKER_HOST ?? 'unix://').startsWith('unix://') && meminfo !== null) {
      assert.equal(bytes, Number(meminfo[1]) * 1024, 'a local engine reports the kernel MemTotal of this machine');
    }
  });
});
