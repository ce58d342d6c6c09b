import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isSandboxPlaneError } from '../../../src/domain/errors';
import { formatDockerEndpoint, parseDockerHost, toContainerState } from '../../../src/docker';

describe('parseDockerHost', () => {
  test('absent or empty means the default socket', () => {
    assert.deepEqual(parseDockerHost(undefined), { kind: 'unix', socketPath: '/var/run/docker.sock' });
    assert.deepEqual(parseDockerHost(''), { kind: 'unix', socketPath: '/var/run/docker.sock' });
  });

  test('reads unix, npipe and tcp forms', () => {
    assert.deepEqual(parseDockerHost('unix:///run/sandboxplane-docker/docker.sock'), {
      kind: 'unix',
      socketPath: '/run/sandboxplane-docker/docker.sock',
    });
    assert.deepEqual(parseDockerHost('npipe:////./pipe/docker_engine'), { kind: 'npipe', socketPath: '//./pipe/docker_engine' });
    assert.deepEqual(parseDockerHost('tcp://127.0.0.1:2375'), { kind: 'tcp', host: '127.0.0.1', port: 2375 });
    assert.deepEqual(parseDockerHost('tcp://[::1]:2375'), { kind: 'tcp', host: '::1', port: 2375 });
  });

  test('formats back to the DOCKER_HOST form', () => {
    for (const value of ['unix:///var/run/docker.sock', 'tcp://127.0.0.1:2375', 'tcp://[::1]:2375', 'npipe:////./pipe/docker_engine']) {
      assert.equal(formatDockerEndpoint(parseDockerHost(value)), value);
    }
  });

  test('refuses anything else with CONFIG_INVALID naming DOCKER_HOST', () => {
    for (const value of ['http://127.0.0.1:2375', 'tcp://127.0.0.1', 'tcp://127.0.0.1:99999', 'ssh://me@host', '/var/run/docker.sock']) {
      assert.throws(
        () => parseDockerHost(value),
        (err: unknown) => isSandboxPlaneError(err) && err.code === 'CONFIG_INVALID' && err.message.includes('DOCKER_HOST') && err.message.includes(value),
        value,
      );
    }
  });
});

describe('toContainerState', () => {
  test('maps every engine state onto the one enum', () => {
    for (const state of ['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead']) {
      assert.equal(toContainerState(state), state);
    }
    assert.equal(toContainerState('Running'), 'running');
    assert.equal(toContainerState('Up 2 seconds'), 'unknown');
    assert.equal(toContainerState(undefined), 'unknown');
  });
});
