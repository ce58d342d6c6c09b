import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, DEFAULT_WORKFLOW_CACHE_SIZE, loadConfig, loadTemporalTlsSettings } from '../../src/config/config';
import { readTemporalTls } from '../../src/config/temporal-tls';
import { enableLocalFlags } from '../../src/config/local-flags';
import { DEFAULT_STORE_PATH } from '../../src/config/paths';
import { isPinnedImage } from '../../src/domain/image-reference';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('loadConfig accepted a bad environment');
}

describe('loadConfig', () => {
  test('an empty environment gives the documented defaults, all flags off, frozen', () => {
    const config = loadConfig({});
    assert.equal(config.temporalAddress, '127.0.0.1:7233');
    assert.equal(config.temporalNamespace, 'default');
    assert.equal(config.taskQueue, 'sandboxplane');
    assert.equal(config.storePath, DEFAULT_STORE_PATH);
    assert.equal(config.dockerHost, undefined);
    assert.ok(Object.values(config.flags).every((on) => on === false));
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.flags));
  });

  test('reads every documented variable', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'sandboxes',
      SANDBOXPLANE_TASK_QUEUE: 'plane-a',
      SANDBOXPLANE_DB: '/var/lib/plane/db.sqlite',
      DOCKER_HOST: 'unix:///run/docker.sock',
      SANDBOXPLANE_FLAG_CLOUD_SANDBOX: 'on',
      SANDBOXPLANE_FLAG_STAGING_APPLY: '0',
    });
    assert.equal(config.temporalAddress, 'temporal.internal:7233');
    assert.equal(config.temporalNamespace, 'sandboxes');
    assert.equal(config.taskQueue, 'plane-a');
    assert.equal(config.storePath, '/var/lib/plane/db.sqlite');
    assert.equal(config.dockerHost, 'unix:///run/docker.sock');
    assert.equal(config.flags.CLOUD_SANDBOX, true);
    assert.equal(config.flags.STAGING_APPLY, false);
  });

  test('a bad TEMPORAL_ADDRESS is named, with what a good one looks like', () => {
    const err = configError({ TEMPORAL_ADDRESS: 'nonsense' });
    assert.equal(err.code, 'CONFIG_INVALID');
    assert.equal(err.exitCode, 2);
    assert.deepEqual(
      err.issues.map((issue) => issue.key),
      ['TEMPORAL_ADDRESS'],
    );
    assert.match(err.message, /TEMPORAL_ADDRESS: must be host:port .* got 'nonsense'/);
  });

  test('Worker Versioning: deployment sandboxplane and a derived build id unless set; a name Temporal would refuse is named', () => {
    assert.deepEqual(loadConfig({}).deployment, { name: 'sandboxplane', buildId: undefined });
    assert.deepEqual(loadConfig({ SANDBOXPLANE_DEPLOYMENT: 'plane-2', SANDBOXPLANE_BUILD_ID: '2026-12-05.1' }).deployment, { name: 'plane-2', buildId: '2026-12-05.1' });
    assert.throws(() => loadConfig({ SANDBOXPLANE_DEPLOYMENT: 'plane.2' }), /SANDBOXPLANE_DEPLOYMENT: must be letters, digits, '_' or '-' \(no '\.' or ':'\)/);
    assert.throws(() => loadConfig({ SANDBOXPLANE_BUILD_ID: 'a:b' }), /SANDBOXPLANE_BUILD_ID: must be letters, digits, '\.', '_' or '-' \(no ':'\)/);
  });

  test('a port out of range is refused', () => {
    assert.deepEqual(
      configError({ TEMPORAL_ADDRESS: 'localhost:99999' }).issues.map((i) => i.key),
      ['TEMPORAL_ADDRESS'],
    );
  });

  test('several bad keys come back in one error naming each', () => {
    const err = configError({
      TEMPORAL_ADDRESS: 'nonsense',
      TEMPORAL_NAMESPACE: 'has space',
      SANDBOXPLANE_TASK_QUEUE: '/queue',
      DOCKER_HOST: '/var/run/docker.sock',
      SANDBOXPLANE_LOG_LEVEL: 'loud',
      SANDBOXPLANE_FLAG_CLOUD_SANDBOX: 'maybe',
      SANDBOXPLANE_FLAG_CLOUD_SANDBOXES: '1',
    });
    assert.deepEqual(err.issues.map((issue) => issue.key).sort(), [
      'DOCKER_HOST',
      'SANDBOXPLANE_FLAG_CLOUD_SANDBOX',
      'SANDBOXPLANE_FLAG_CLOUD_SANDBOXES',
      'SANDBOXPLANE_LOG_LEVEL',
      'SANDBOXPLANE_TASK_QUEUE',
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
    ]);
    for (const issue of err.issues) assert.ok(err.message.includes(`${issue.key}: `), `message names ${issue.key}`);
  });

  test('a flag with a word that is not a boolean is named with the accepted words', () => {
    const err = configError({ SANDBOXPLANE_FLAG_CLOUD_SANDBOX: 'maybe' });
    assert.match(err.message, /SANDBOXPLANE_FLAG_CLOUD_SANDBOX: must be one of 1, 0, true, false, on, off, yes, no; got 'maybe'/);
  });

  test('a misspelt flag is refused instead of silently ignored', () => {
    const err = configError({ SANDBOXPLANE_FLAG_CLOUD_SANDBOXES: '1' });
    assert.match(err.message, /SANDBOXPLANE_FLAG_CLOUD_SANDBOXES: is not a known flag; known flags: SANDBOXPLANE_FLAG_CLOUD_SANDBOX/);
  });

  test('emulator images must be pinned by the broker rule: an image id or a digest reference, with a registry port or not', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    for (const image of [digest, 'a'.repeat(64), `floci/floci@${digest}`, `registry.local:5000/floci/floci:1.2@${digest}`, `localhost:5000/floci@${digest}`]) {
      const config = loadConfig({ SANDBOXPLANE_MOTO_IMAGE: image, SANDBOXPLANE_FLOCI_IMAGE: image });
      assert.equal(config.emulators.motoImage, image);
      assert.equal(config.emulators.flociImage, image, `${image} is accepted for Floci as the broker accepts it`);
      assert.equal(isPinnedImage(image), true);
    }
    const message = 'must be an image id (sha256:<64 hex>) or a digest reference ([host[:port]/]name@sha256:<64 hex>); a tag can move';
    for (const image of ['motoserver/moto:5', 'floci/floci:latest', 'registry.local:5000/floci/floci:1.2', `sha256:${'a'.repeat(63)}`]) {
      assert.equal(isPinnedImage(image), false);
      const err = configError({ SANDBOXPLANE_MOTO_IMAGE: image, SANDBOXPLANE_FLOCI_IMAGE: image });
      assert.deepEqual(err.issues, [
        { key: 'SANDBOXPLANE_MOTO_IMAGE', message },
        { key: 'SANDBOXPLANE_FLOCI_IMAGE', message },
      ]);
    }
  });

  test('empty values count as unset', () => {
    assert.equal(loadConfig({ TEMPORAL_ADDRESS: '', SANDBOXPLANE_FLAG_CLOUD_SANDBOX: '' }).temporalAddress, '127.0.0.1:7233');
  });
});

describe('enableLocalFlags (dev launcher)', () => {
  test('turns on the local flags the environment leaves unset, and says which', () => {
    const env = { SANDBOXPLANE_FLAG_ADAPTER_MOTO: '0' };
    const { config, enabled } = enableLocalFlags(loadConfig(env), env);
    assert.ok(enabled.includes('CLOUD_SANDBOX'));
    assert.equal(config.flags.CLOUD_SANDBOX, true);
    assert.equal(config.flags.ADAPTER_MOTO, false, 'an explicit 0 wins');
    assert.ok(!enabled.includes('ADAPTER_MOTO'));
    assert.equal(config.flags.PRODUCTION_APPLY, false, 'non-local flags stay off');
    assert.equal(config.flags.STAGING_APPLY, false);
  });
});

describe('SANDBOXPLANE_PLANE_ID', () => {
  test('unset means derived at start; a label-safe value is taken as it is', () => {
    assert.equal(loadConfig({}).planeId, undefined);
    assert.equal(loadConfig({ SANDBOXPLANE_PLANE_ID: 'ci-job-42' }).planeId, 'ci-job-42');
    assert.equal(loadConfig({ SANDBOXPLANE_PLANE_ID: 'default@127.0.0.1:7233' }).planeId, 'default@127.0.0.1:7233', 'the value older workers wrote');
  });

  for (const bad of ['-leading-dash', 'has space', 'a/b', 'x'.repeat(129), 'quote"d']) {
    test(`'${bad.slice(0, 20)}' is CONFIG_INVALID naming the variable`, () => {
      const err = configError({ SANDBOXPLANE_PLANE_ID: bad });
      assert.equal(err.code, 'CONFIG_INVALID');
      assert.deepEqual(
        err.issues.map((issue) => issue.key),
        ['SANDBOXPLANE_PLANE_ID'],
      );
      assert.match(err.message, /SANDBOXPLANE_PLANE_ID: must start with a letter or digit/);
    });
  }

  test('worker roles: all by default, a comma list in role order, a bad name refused with the names that work', () => {
    assert.deepEqual(loadConfig({}).workerRoles, ['lifecycle', 'store', 'docker', 'targets']);
    assert.deepEqual(loadConfig({ SANDBOXPLANE_WORKER_ROLES: 'docker, lifecycle' }).workerRoles, ['lifecycle', 'docker']);
    assert.deepEqual(loadConfig({ SANDBOXPLANE_HOST_ID: 'b', SANDBOXPLANE_HOST_CAPACITY: '8' }).host, { id: 'b', capacity: 8, warmPool: {}, memoryFraction: 0.9, memoryOvercommit: 3 });
    assert.throws(
      () => loadConfig({ SANDBOXPLANE_WORKER_ROLES: 'lifecycle,sotre', SANDBOXPLANE_HOST_ID: 'Host_A', SANDBOXPLANE_HOST_CAPACITY: '0' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.issues.map((issue) => issue.key).sort(), ['SANDBOXPLANE_HOST_CAPACITY', 'SANDBOXPLANE_HOST_ID', 'SANDBOXPLANE_WORKER_ROLES']);
        assert.match(err.message, /SANDBOXPLANE_WORKER_ROLES: must be all or a comma-separated list of lifecycle, store, docker, targets; got 'lifecycle,sotre'/);
        return true;
      },
    );
  });

  test('workflow cache: 100 runs by default, 2 at least, a bad value named', () => {
    assert.equal(loadConfig({}).workflowCacheSize, DEFAULT_WORKFLOW_CACHE_SIZE);
    assert.equal(DEFAULT_WORKFLOW_CACHE_SIZE, 100);
    assert.equal(loadConfig({ SANDBOXPLANE_WORKFLOW_CACHE_SIZE: '2' }).workflowCacheSize, 2);
    for (const bad of ['1', '0', '-5', 'lots', '1000000']) {
      assert.throws(
        () => loadConfig({ SANDBOXPLANE_WORKFLOW_CACHE_SIZE: bad }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.issues.length === 1 &&
          err.issues[0]?.key === 'SANDBOXPLANE_WORKFLOW_CACHE_SIZE' &&
          err.issues[0].message === 'must be a whole number from 2 to 999999',
        bad,
      );
    }
  });

  test('emulator starts at once: four per CPU by default (at least 2), a bad value named', () => {
    assert.equal(loadConfig({}).emulators.startConcurrency, Math.max(2, 4 * os.availableParallelism()));
    assert.equal(loadConfig({ SANDBOXPLANE_EMULATOR_START_CONCURRENCY: '3' }).emulators.startConcurrency, 3);
    for (const bad of ['0', '-1', 'four', '257']) {
      assert.throws(
        () => loadConfig({ SANDBOXPLANE_EMULATOR_START_CONCURRENCY: bad }),
        (err: unknown) => err instanceof ConfigError && err.issues[0]?.key === 'SANDBOXPLANE_EMULATOR_START_CONCURRENCY',
        bad,
      );
    }
  });

  test('sweep removals at once: 8 by default, a bad value named', () => {
    assert.equal(loadConfig({}).sweepRemoveConcurrency, 8);
    assert.equal(loadConfig({ SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY: '32' }).sweepRemoveConcurrency, 32);
    for (const bad of ['0', '-1', 'many']) {
      assert.throws(
        () => loadConfig({ SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY: bad }),
        (err: unknown) => err instanceof ConfigError && err.issues[0]?.key === 'SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY',
        bad,
      );
    }
  });
});

describe('SANDBOXPLANE_TEMPORAL_TLS_* (mTLS to Temporal, DESIGN §18)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-tls-'));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text);
    return at;
  };
  const cert = file('operator.pem', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  const key = file('operator-key.pem', '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n');
  const ca = file('ca.pem', '-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n');

  test('unset: plain gRPC; set: the paths, read into the SDK option', () => {
    assert.equal(loadConfig({}).temporalTls, undefined);
    assert.equal(loadTemporalTlsSettings({}), undefined);
    const env = {
      SANDBOXPLANE_TEMPORAL_TLS_CERT: cert,
      SANDBOXPLANE_TEMPORAL_TLS_KEY: key,
      SANDBOXPLANE_TEMPORAL_TLS_CA: ca,
      SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME: 'sandboxplane-temporal',
    };
    const settings = loadConfig(env).temporalTls;
    assert.deepEqual(settings, { certPath: cert, keyPath: key, caPath: ca, serverName: 'sandboxplane-temporal' });
    assert.deepEqual(loadTemporalTlsSettings(env), settings);
    const options = readTemporalTls(settings!);
    assert.equal(options.clientCertPair?.crt.toString(), fs.readFileSync(cert, 'utf8'));
    assert.equal(options.clientCertPair?.key.toString(), fs.readFileSync(key, 'utf8'));
    assert.equal(options.serverRootCACertificate?.toString(), fs.readFileSync(ca, 'utf8'));
    assert.equal(options.serverNameOverride, 'sandboxplane-temporal');
    // A CA alone: TLS that checks the server, no client certificate.
    assert.deepEqual(loadConfig({ SANDBOXPLANE_TEMPORAL_TLS_CA: ca }).temporalTls, { certPath: undefined, keyPath: undefined, caPath: ca, serverName: undefined });
  });

  test('a missing, unreadable or wrong file, or a certificate without its key, is one ConfigError naming each variable', () => {
    const err = configError({
      SANDBOXPLANE_TEMPORAL_TLS_CERT: path.join(dir, 'nowhere.pem'),
      SANDBOXPLANE_TEMPORAL_TLS_KEY: cert,
      SANDBOXPLANE_TEMPORAL_TLS_CA: dir,
    });
    assert.deepEqual(err.issues.map((issue) => issue.key).sort(), ['SANDBOXPLANE_TEMPORAL_TLS_CA', 'SANDBOXPLANE_TEMPORAL_TLS_CERT', 'SANDBOXPLANE_TEMPORAL_TLS_KEY']);
    assert.equal(err.code, 'CONFIG_INVALID');
    assert.match(err.message, /SANDBOXPLANE_TEMPORAL_TLS_CERT: \S*nowhere\.pem does not exist/);
    assert.match(err.message, /SANDBOXPLANE_TEMPORAL_TLS_KEY: \S*operator\.pem holds no PEM PRIVATE KEY/);
    assert.match(err.message, /SANDBOXPLANE_TEMPORAL_TLS_CA: \S* is a directory/);

    const halves = configError({ SANDBOXPLANE_TEMPORAL_TLS_CERT: cert });
    assert.deepEqual(
      halves.issues.map((issue) => issue.key),
      ['SANDBOXPLANE_TEMPORAL_TLS_KEY'],
    );
    assert.match(halves.message, /must be set with SANDBOXPLANE_TEMPORAL_TLS_CERT/);
    assert.deepEqual(
      configError({ SANDBOXPLANE_TEMPORAL_TLS_KEY: key }).issues.map((issue) => issue.key),
      ['SANDBOXPLANE_TEMPORAL_TLS_CERT'],
    );
    assert.deepEqual(
      configError({ SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME: 'sandboxplane-temporal' }).issues.map((issue) => issue.key),
      ['SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME'],
    );
    assert.throws(
      () => loadTemporalTlsSettings({ SANDBOXPLANE_TEMPORAL_TLS_CERT: cert }),
      (thrown: unknown) => thrown instanceof ConfigError && thrown.issues[0]?.key === 'SANDBOXPLANE_TEMPORAL_TLS_KEY',
    );
  });
});

describe('container limits: SANDBOXPLANE_CONTAINER_LOG_MAX, _FILES and SANDBOXPLANE_HOST_MEMORY_FRACTION (DESIGN §12)', () => {
  test('defaults: each container keeps 10 MiB of log in 2 files; the containers may hold 0.9 of the engine memory', () => {
    const config = loadConfig({});
    assert.deepEqual(config.emulators.containerLog, { maxBytes: 10 * 1024 * 1024, files: 2 });
    assert.equal(config.host.memoryFraction, 0.9);
  });

  test('sizes read as Docker reads them (powers of 1024), a fraction up to 1', () => {
    const config = loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: '20m', SANDBOXPLANE_CONTAINER_LOG_FILES: '4', SANDBOXPLANE_HOST_MEMORY_FRACTION: '0.75' });
    assert.deepEqual(config.emulators.containerLog, { maxBytes: 20 * 1024 * 1024, files: 4 });
    assert.equal(config.host.memoryFraction, 0.75);
    assert.equal(loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: '1g' }).emulators.containerLog.maxBytes, 1024 ** 3);
    assert.equal(loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: '512k' }).emulators.containerLog.maxBytes, 512 * 1024);
    assert.equal(loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: '2000000' }).emulators.containerLog.maxBytes, 2_000_000);
    assert.equal(loadConfig({ SANDBOXPLANE_HOST_MEMORY_FRACTION: '1' }).host.memoryFraction, 1);
  });

  test('an unbounded, tiny or unreadable log limit and a fraction out of range are named in one error', () => {
    assert.throws(
      () => loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: 'lots', SANDBOXPLANE_CONTAINER_LOG_FILES: '0', SANDBOXPLANE_HOST_MEMORY_FRACTION: '1.5' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.issues.map((issue) => issue.key).sort(), ['SANDBOXPLANE_CONTAINER_LOG_FILES', 'SANDBOXPLANE_CONTAINER_LOG_MAX', 'SANDBOXPLANE_HOST_MEMORY_FRACTION']);
        assert.match(err.message, /SANDBOXPLANE_CONTAINER_LOG_MAX: must be a size such as 10m, 512k or 1g \(or bytes\), got 'lots'/);
        assert.match(err.message, /SANDBOXPLANE_CONTAINER_LOG_FILES: must be a whole number from 1 to 20/);
        assert.match(err.message, /SANDBOXPLANE_HOST_MEMORY_FRACTION: must be a number above 0 and at most 1/);
        return true;
      },
    );
    for (const fraction of ['0', '-0.5', 'most']) {
      assert.throws(() => loadConfig({ SANDBOXPLANE_HOST_MEMORY_FRACTION: fraction }), /SANDBOXPLANE_HOST_MEMORY_FRACTION/, fraction);
    }
    assert.throws(() => loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: '0' }), /SANDBOXPLANE_CONTAINER_LOG_MAX: must give each of the 2 log files .* at least 64k, got 0 bytes/);
    assert.throws(() => loadConfig({ SANDBOXPLANE_CONTAINER_LOG_MAX: '100k', SANDBOXPLANE_CONTAINER_LOG_FILES: '2' }), /SANDBOXPLANE_CONTAINER_LOG_MAX: must give each/);
  });
  test('SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: the limits may add up to three times the allocatable memory by default; 1 to 10, else named', () => {
    assert.equal(loadConfig({}).host.memoryOvercommit, 3);
    assert.equal(loadConfig({ SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: '1' }).host.memoryOvercommit, 1);
    assert.equal(loadConfig({ SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: '1.5' }).host.memoryOvercommit, 1.5);
    for (const factor of ['0.5', '11', 'lots', '-2']) {
      assert.throws(() => loadConfig({ SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: factor }), /SANDBOXPLANE_HOST_MEMORY_OVERCOMMIT: must be a number from 1 to 10/, factor);
    }
  });
});
