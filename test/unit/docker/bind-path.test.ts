import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { checkBindSource, classifyHostPath, FORBIDDEN_POSIX_PATHS, FORBIDDEN_WINDOWS_PATHS, formatBind, parseBind, type ParsedBind } from '../../../src/docker';

function parsed(text: string): ParsedBind {
  const result = parseBind(text);
  assert.ok(result.ok, `expected '${text}' to parse, got ${result.ok ? '' : result.reason}`);
  return result.bind;
}

describe('parseBind', () => {
  test('splits POSIX binds on colons', () => {
    assert.deepEqual(parsed('/srv/data:/data'), { source: '/srv/data', target: '/data', mode: undefined });
    assert.deepEqual(parsed('/srv/data:/data:ro'), { source: '/srv/data', target: '/data', mode: 'ro' });
  });

  test('keeps a Windows drive letter with its path', () => {
    assert.deepEqual(parsed('C:\\Users\\me:/workspace'), { source: 'C:\\Users\\me', target: '/workspace', mode: undefined });
    assert.deepEqual(parsed('C:\\x:/y'), { source: 'C:\\x', target: '/y', mode: undefined });
    assert.deepEqual(parsed('d:/data:C:\\data:ro'), { source: 'd:/data', target: 'C:\\data', mode: 'ro' });
    assert.deepEqual(parsed('\\\\?\\C:\\Windows:/w'), { source: '\\\\?\\C:\\Windows', target: '/w', mode: undefined });
  });

  test('parses named pipes', () => {
    assert.deepEqual(parsed('\\\\.\\pipe\\docker_engine:\\\\.\\pipe\\docker_engine'), {
      source: '\\\\.\\pipe\\docker_engine',
      target: '\\\\.\\pipe\\docker_engine',
      mode: undefined,
    });
  });

  test('reports what is missing', () => {
    assert.deepEqual(parseBind('/only-a-source'), { ok: false, reason: "has no target (expected source:target[:mode], got '/only-a-source')" });
    assert.equal(parseBind(':/x').ok, false);
    assert.equal(parseBind('/x:').ok, false);
    assert.equal(parseBind('/x:/y:').ok, false);
  });
});

describe('classifyHostPath', () => {
  test('normalises POSIX paths', () => {
    assert.equal(classifyHostPath('/tmp/../etc/').normalized, '/etc');
    assert.equal(classifyHostPath('//var///run/./docker.sock').normalized, '/var/run/docker.sock');
    assert.equal(classifyHostPath('/..').normalized, '/');
  });

  test('normalises Windows paths, case-insensitively for comparison', () => {
    const path = classifyHostPath('c:/users/ME/../Me/');
    assert.equal(path.style, 'windows');
    assert.equal(path.normalized, 'C:\\users\\Me');
    assert.equal(path.key, 'c:\\users\\me');
    assert.equal(classifyHostPath('C:\\Users.\\x ').normalized, 'C:\\Users\\x');
    assert.equal(classifyHostPath('\\\\?\\c:\\Windows').normalized, 'C:\\Windows');
  });

  test('tells pipes, UNC, device and relative paths apart', () => {
    assert.equal(classifyHostPath('//./pipe/docker_engine').style, 'pipe');
    assert.equal(classifyHostPath('\\\\server\\share').style, 'unc');
    assert.equal(classifyHostPath('\\\\?\\UNC\\server\\share').style, 'unc');
    assert.equal(classifyHostPath('\\\\.\\PhysicalDrive0').style, 'device');
    assert.equal(classifyHostPath('myvolume').style, 'relative');
    assert.equal(classifyHostPath('C:relative').style, 'relative');
  });
});

describe('checkBindSource', () => {
  const refused = (source: string, reason: string) => assert.deepEqual(checkBindSource(source), { ok: false, reason });

  test('names the forbidden path and the relation', () => {
    refused('C:\\Users\\me', 'source C:\\Users\\me is inside the forbidden path C:\\Users');
    refused('/etc', 'source /etc is the forbidden path /etc');
    refused('/var', 'source /var contains the forbidden path /var/run/docker.sock');
    refused('/', 'source / is the root of the host file system');
    refused('C:\\', 'source C:\\ is the root of the host file system');
    refused('/tmp/../etc/ssh', 'source /tmp/../etc/ssh (normalised /etc/ssh) is inside the forbidden path /etc');
    refused('c:\\WINDOWS\\system32', 'source c:\\WINDOWS\\system32 (normalised C:\\WINDOWS\\system32) is inside the forbidden path C:\\Windows');
    refused('\\\\.\\pipe\\docker_engine', 'source \\\\.\\pipe\\docker_engine is the Docker engine pipe \\\\.\\pipe\\docker_engine');
  });

  test('protects extra paths such as the socket of the engine in use', () => {
    const verdict = checkBindSource('/run/sandboxplane-docker', { extraForbiddenPaths: ['/srv/engine/docker.sock'] });
    assert.equal(verdict.ok, false);
    const extra = checkBindSource('/srv/engine', { extraForbiddenPaths: ['/srv/engine/docker.sock'] });
    assert.deepEqual(extra, { ok: false, reason: 'source /srv/engine contains the forbidden path /srv/engine/docker.sock' });
  });

  test('allows ordinary project directories', () => {
    for (const source of ['/srv/sandbox/data', '/tmp/work', '/var/lib/sandbox-data', '/etcetera', 'D:\\projects\\x', 'C:\\Userspace']) {
      const verdict = checkBindSource(source);
      assert.ok(verdict.ok, `${source} should be allowed`);
    }
  });
});

const segment = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9 ._-]{0,11}$/).filter((s) => s !== '.' && s !== '..' && !/[. ]$/.test(s));
const posixPath = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => `/${parts.join('/')}`);
const windowsPath = fc
  .tuple(fc.constantFrom(...'ACDZcdz'), fc.constantFrom('\\', '/'), fc.array(segment, { maxLength: 5 }))
  .map(([drive, separator, parts]) => `${drive}:${separator}${parts.join(separator)}`);
const pipePath = segment.map((name) => `\\\\.\\pipe\\${name}`);
const mode = fc.option(fc.constantFrom('ro', 'rw', 'z', 'ro,Z', 'rshared'), { nil: undefined });

describe('bind parser properties', () => {
  test('round-trips POSIX, Windows and pipe forms', () => {
    fc.assert(
      fc.property(fc.oneof(posixPath, windowsPath, pipePath), fc.oneof(posixPath, windowsPath), mode, (source, target, bindMode) => {
        const bind: ParsedBind = { source, target, mode: bindMode };
        const result = parseBind(formatBind(bind));
        assert.ok(result.ok);
        assert.deepEqual(result.bind, bind);
        assert.equal(formatBind(result.bind), formatBind(bind));
      }),
      { numRuns: 500 },
    );
  });

  test('normalisation is idempotent', () => {
    fc.assert(
      fc.property(fc.oneof(posixPath, windowsPath, pipePath), (path) => {
        const once = classifyHostPath(path);
        const twice = classifyHostPath(once.normalized);
        assert.equal(twice.normalized, once.normalized);
        assert.equal(twice.style, once.style);
      }),
      { numRuns: 500 },
    );
  });

  /** Disguises a path: `x/..` detours, `.` and doubled separators, trailing separators, case on Windows. */
  function disguised(path: string, windows: boolean) {
    return fc
      .tuple(
        fc.array(fc.constantFrom('detour', 'dot', 'double', 'none'), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.array(fc.boolean(), { minLength: path.length, maxLength: path.length }),
        fc.array(segment, { maxLength: 3 }),
        fc.boolean(),
      )
      .map(([tricks, trailing, upper, inside, forward]) => {
        const separator = windows && forward ? '/' : windows ? '\\' : '/';
        const [head, ...rest] = windows ? [path.slice(0, 2), ...path.slice(3).split('\\')] : ['', ...path.slice(1).split('/')];
        const parts = [...rest, ...inside];
        const trick = tricks.map((name) => (name === 'detour' ? `tmp${separator}..` : name === 'dot' ? '.' : name === 'double' ? '' : null));
        const body = parts.map((part, index) => {
          const extra = trick[index % trick.length];
          return extra === null || extra === undefined ? part : `${extra}${separator}${part}`;
        });
        let text = `${head}${separator}${body.join(separator)}${trailing ? separator : ''}`;
        if (windows) text = [...text].map((char, index) => (upper[index] ? char.toUpperCase() : char.toLowerCase())).join('');
        return text;
      });
  }

  test('no disguise of a forbidden POSIX path gets through', () => {
    for (const forbidden of FORBIDDEN_POSIX_PATHS) {
      fc.assert(
        fc.property(disguised(forbidden, false), (source) => {
          assert.equal(checkBindSource(source).ok, false, `${source} (for ${forbidden}) passed`);
        }),
        { numRuns: 100 },
      );
    }
  });

  test('no disguise of a forbidden Windows path gets through', () => {
    for (const forbidden of FORBIDDEN_WINDOWS_PATHS) {
      fc.assert(
        fc.property(disguised(forbidden, true), (source) => {
          assert.equal(checkBindSource(source).ok, false, `${source} (for ${forbidden}) passed`);
        }),
        { numRuns: 100 },
      );
    }
  });
});
