import { OVERFLOW_LINE, RECORDED_AS_HEADER, RECORDING_LIMIT_BYTES } from './moto-recording';
import { OPERATOR_HEADER, OPERATOR_PATH } from './operator-endpoint';

/** The port moto listens on inside its container. */
export const MOTO_PORT = 5000;

/** The environment variable that gives a moto container its operator token. */
export const OPERATOR_TOKEN_ENV = 'SANDBOXPLANE_MOTO_API_TOKEN';

/** The header that makes a call the plane's own (minting, IaC plans, applies and checks, moto's own API): its value is the operator token. */
export { OPERATOR_HEADER };

/** Where moto's recorder keeps the recording: /dev/shm, the one writable place of a read-only container, inside its memory limit. */
export const RECORDING_PATH = '/dev/shm/sandboxplane-recording.jsonl';

/**
 * Under {@link OPERATOR_PATH}: `POST "<seconds> <lease>"` serves only the plane for that long
 * (a restore, or a pause from its capture until its container goes; sent again to renew),
 * answering once the requests of others already admitted are served; `"0 <lease>"` ends it,
 * for that lease only: a restore given up on (a timed-out attempt) cannot end the quiet of
 * the one that took over.
 */
export const QUIESCE_PATH = '/sandboxplane/quiesce';

/**
 * Under {@link OPERATOR_PATH}: `GET` answers `{"requests": N}`, the AWS calls the guard let
 * through to moto for others than the plane (the agent) since the container started —
 * never the plane's own calls (minting, IaC, health, snapshots) nor refused ones (DESIGN §19).
 */
export const USAGE_PATH = '/sandboxplane/usage';

/**
 * How long a quiet waits for requests admitted before it to be served; past it the quiet is
 * not taken (503), so a capture never reads a state an acknowledged request is missing from.
 * Well inside the 30 s an activity that does not heartbeat has.
 */
const DRAIN_SECONDS = 10;

/** How WSGI names a request header in its environ. */
function environName(header: string): string {
  return `HTTP_${header.toUpperCase().replaceAll('-', '_')}`;
}

/**
 * moto's server behind a guard, run as the container's command:
 *
 * - moto's own API (`/moto-api/...`: reset, seed, the recorder, data.json, which lists every
 *   access key with its secret) is served only under {@link OPERATOR_PATH} to a request
 *   carrying the token in {@link OPERATOR_HEADER}, and answered 403 anywhere else, so whoever
 *   reaches the port cannot wipe the sandbox or read its keys. The token is in a header, never
 *   in a URL: an error or a log line that shows where a call went cannot show it. Requests
 *   under that path reach moto with the prefix cut off, from the raw URI too (moto's S3
 *   reads it), so their signatures still check out, and moto checks their IAM as it would
 *   (a restore replays an agent's calls there).
 * - An AWS call outside that path that carries the token in {@link OPERATOR_HEADER} skips moto's IAM checks:
 *   the plane mints keys and applies an agent's approved template through it, whatever the
 *   sandbox's own key may do; a wrong token is 403.
 * - moto's recorder (DESIGN §15: a snapshot is its recording) records AWS calls only, never
 *   moto's own API (health probes, resets). A call made with the token is recorded with
 *   {@link RECORDED_AS_HEADER}, which the guard strips from every other call, so a replay
 *   sends the token again and an agent cannot mark its own calls. Recording stops, marked
 *   by {@link OVERFLOW_LINE}, before a request whose entry could pass
 *   {@link RECORDING_LIMIT_BYTES} (its headers, URL and body as JSON escapes them), and
 *   after one whose entry did, cut off again: until the plane uploads a new recording.
 * - A header a replay could not send again (a name that is no HTTP token, such as `X-A{b}`,
 *   or a value with control characters; Node refuses both) is refused 400 before moto sees
 *   the call, so every recording replays.
 * - It counts the AWS calls it lets through for others than the plane ({@link USAGE_PATH}).
 * - While a restore runs, and from a pause's capture until its container goes
 *   ({@link QUIESCE_PATH}), only the plane is served: anyone else gets 503, so nothing
 *   slips in between the reset and the replay, or between the capture and the teardown.
 *   A quiet starts once the requests it found in hand are served (they are in what is read
 *   next). It is a lease: one whose holder dies lapses after its last renewal's length.
 *
 * Everything else goes to moto unchanged; moto's own `main` runs the server, without its
 * access log (each line would show a request's path).
 */
export const MOTO_GUARD_SCRIPT = [
  'import contextvars, hmac, io, json, logging, os, re, threading, time',
  'from urllib.parse import unquote',
  'import moto.server as server',
  'from moto.core import authorization',
  'from moto.moto_api import recorder',
  `token = os.environ.pop("${OPERATOR_TOKEN_ENV}", "")`,
  'logging.getLogger("werkzeug").setLevel(logging.WARNING)',
  `prefix = "${OPERATOR_PATH}"`,
  'operator_call = contextvars.ContextVar("sandboxplane_operator_call", default=False)',
  'checked = authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action',
  'def authenticate(self, *args, **kwargs):',
  '    return None if operator_call.get() else checked(self, *args, **kwargs)',
  'authorization.ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate',
  'state = {"overflowed": False, "quiet_until": 0.0, "quiet_lease": "", "admitted": 0, "agent_requests": 0}',
  // Guards the quiet and the count of others' requests in hand, which a quiet waits to reach 0.
  'served = threading.Condition()',
  'record = recorder._record_request',
  // What the recorder will write for this request, at most: its headers and URL as JSON, and its
  // body as JSON text (a UTF-8 byte escapes to at most 6) or base64 (binary).
  'def body_of(request):',
  '    try:',
  '        length = int(request.headers["Content-Length"])',
  '    except (KeyError, ValueError):',
  '        return b""',
  // Read as the recorder reads it, and put back for the recorder and moto to read again.
  '    data = request.environ["wsgi.input"].read(length)',
  '    request.environ["wsgi.input"] = io.BytesIO(data)',
  '    return data',
  'def entry_bound(request, body):',
  '    data = body if body is not None else body_of(request)',
  '    if isinstance(data, str):',
  '        data = data.encode("utf-8", "replace")',
  '    try:',
  '        data.decode("utf-8")',
  '        body_bytes = 6 * len(data)',
  '    except UnicodeDecodeError:',
  '        body_bytes = 4 * (len(data) + 2) // 3',
  '    return len(json.dumps(dict(request.headers))) + len(json.dumps(request.raw_url)) + body_bytes + 128',
  'def overflow(keep):',
  '    state["overflowed"] = True',
  '    with open(recorder._location, "a") as recording:',
  '        recording.truncate(keep)',
  `        recording.write(${JSON.stringify(`${OVERFLOW_LINE}\n`)})`,
  'def record_aws_calls(request, body=None):',
  '    if request.path.startswith("/moto-api/") or state["overflowed"] or not recorder._user_enabled:',
  '        return',
  '    try:',
  '        size = os.path.getsize(recorder._location)',
  '    except OSError:',
  '        size = 0',
  `    if size + entry_bound(request, body) > ${RECORDING_LIMIT_BYTES}:`,
  '        return overflow(size)',
  '    record(request, body)',
  // The bound above is what may be written; this is what was: a recording never holds more than the limit.
  '    try:',
  `        if os.path.getsize(recorder._location) > ${RECORDING_LIMIT_BYTES}:`,
  '            overflow(size)',
  '    except OSError:',
  '        pass',
  'recorder._record_request = record_aws_calls',
  'def answer(start_response, status, body, headers=()):',
  '    start_response(status, [("Content-Type", "application/json"), *headers])',
  '    return [body]',
  'FORBIDDEN = b\'{"error": "the emulator API is reserved for the sandbox plane"}\'',
  // What a replay (Node's http) can send again: a header name that is an HTTP token, a value of tab, visible ASCII or Latin-1.
  String.raw`TOKEN = re.compile(r"[!#$%&'*+.^_\`|~0-9A-Za-z-]+")`,
  String.raw`VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")`,
  'def unreplayable(environ):',
  '    for key, value in environ.items():',
  '        header = key[5:] if key.startswith("HTTP_") else key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else None',
  '        if header is not None and not (TOKEN.fullmatch(header) and isinstance(value, str) and VALUE.fullmatch(value)):',
  '            return header.replace("_", "-").title()',
  '    return None',
  'BUSY = b\'{"error": "the sandbox is being restored from a snapshot, or paused; try again in a few seconds"}\'',
  'UNDRAINED = b\'{"error": "requests of the sandbox were still being served; the quiet was not taken"}\'',
  'class Guarded(server.DomainDispatcherApplication):',
  '    def __call__(self, environ, start_response):',
  '        path = environ.get("PATH_INFO", "")',
  `        environ.pop("${environName(RECORDED_AS_HEADER)}", None)`,
  `        given = environ.pop("${environName(OPERATOR_HEADER)}", None)`,
  '        if given is not None and not (token and hmac.compare_digest(given.encode("latin-1", "replace"), token.encode("latin-1"))):',
  '            return answer(start_response, "403 Forbidden", FORBIDDEN)',
  '        if path.startswith(prefix):',
  '            if given is None or path[len(prefix) : len(prefix) + 1] not in ("", "/"):',
  '                return answer(start_response, "403 Forbidden", FORBIDDEN)',
  '            path = path[len(prefix) :] or "/"',
  '            environ["PATH_INFO"] = path',
  '            for key in ("RAW_URI", "REQUEST_URI"):',
  '                if environ.get(key, "").startswith(prefix):',
  '                    environ[key] = environ[key][len(prefix) :] or "/"',
  `            if path == "${USAGE_PATH}":`,
  '                with served:',
  '                    return answer(start_response, "200 OK", json.dumps({"requests": state["agent_requests"]}).encode("ascii"))',
  `            if path == "${QUIESCE_PATH}":`,
  '                length = int(environ.get("CONTENT_LENGTH") or 0)',
  '                seconds, _, lease = environ["wsgi.input"].read(length).decode("ascii", "replace").partition(" ")',
  '                with served:',
  '                    if int(seconds or "0") <= 0:',
  '                        if lease == state["quiet_lease"]:',
  '                            state["quiet_until"] = 0.0',
  '                        return answer(start_response, "200 OK", b"{}")',
  '                    state["quiet_until"], state["quiet_lease"] = time.monotonic() + int(seconds), lease',
  `                    if served.wait_for(lambda: state["admitted"] == 0, timeout=${DRAIN_SECONDS}):`,
  '                        return answer(start_response, "200 OK", b"{}")',
  '                    if lease == state["quiet_lease"]:',
  '                        state["quiet_until"] = 0.0',
  '                return answer(start_response, "503 Service Unavailable", UNDRAINED)',
  '            if path == "/moto-api/recorder/upload-recording":',
  '                state["overflowed"] = False',
  '            return super().__call__(environ, start_response)',
  '        if "moto-api" in unquote(path).lower():',
  '            return answer(start_response, "403 Forbidden", FORBIDDEN)',
  '        bad = unreplayable(environ)',
  '        if bad is not None:',
  '            message = {"error": f"the header {bad} (its name or value) could not be replayed from a snapshot, so the sandbox refuses it; send the call without it"}',
  '            return answer(start_response, "400 Bad Request", json.dumps(message).encode("utf-8"))',
  '        if given is None:',
  '            with served:',
  '                if time.monotonic() < state["quiet_until"]:',
  '                    return answer(start_response, "503 Service Unavailable", BUSY, [("Retry-After", "5")])',
  '                state["admitted"] += 1',
  '                state["agent_requests"] += 1',
  // moto records and applies the request inside this call; only then is it no longer in hand.
  '            try:',
  '                return super().__call__(environ, start_response)',
  '            finally:',
  '                with served:',
  '                    state["admitted"] -= 1',
  '                    served.notify_all()',
  `        environ["${environName(RECORDED_AS_HEADER)}"] = "operator"`,
  '        marker = operator_call.set(True)',
  '        try:',
  '            return super().__call__(environ, start_response)',
  '        finally:',
  '            operator_call.reset(marker)',
  'server.DomainDispatcherApplication = Guarded',
  `server.main(["-H", "0.0.0.0", "-p", "${MOTO_PORT}"])`,
].join('\n');
