#!/usr/bin/env bash
# Makes Temporal's time-skipping test server (the Java one behind
# TestWorkflowEnvironment.createTimeSkipping) available and prints the path of its
# launcher as the last line. The SDK would download a native build at run time; this
# resolves the pinned io.temporal:temporal-test-server jar and its runtime dependencies
# from Maven Central with mvn instead, into .tools/, and writes .tools/bin/temporal-test-server,
# which sdk-core starts as an `existing-path` executable: `temporal-test-server <port> [extraArgs...]`.
# Idempotent: a second run only reads a file. Installs Java and Maven with apt-get when
# they are missing (as root). Needs Java >= 17 (its launcher uses JDK 13+ class-data options).
set -euo pipefail

PINNED_VERSION="1.38.0"
GROUP_ID="io.temporal"
ARTIFACT_ID="temporal-test-server"
MAIN_CLASS="io.temporal.testserver.TestServer"
# temporal-test-server logs through slf4j-api 1.7 without a binding; a simple one at WARN
# keeps SLF4J's "no binding" notice off stderr while still showing real problems.
SLF4J_VERSION="1.7.36"
DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="$root/.tools"
tools_bin="$tools_dir/bin"
install_dir="$tools_dir/temporal-test-server/$PINNED_VERSION"
launcher="$tools_bin/temporal-test-server"
version_file="$tools_bin/temporal-test-server.version"

say() { printf 'temporal-test-server: %s\n' "$*" >&2; }

# What the version file records: the server version, the java that runs it (the class-data
# archive fits only that JVM) and the install folder (the launcher names it: a moved work
# tree reinstalls).
stamp() { printf '%s %s %s\n' "$PINNED_VERSION" "$1" "$install_dir"; }

installed() {
  [ -x "$launcher" ] && [ -f "$version_file" ] || return 1
  local recorded_version="" recorded_java="" recorded_dir=""
  read -r recorded_version recorded_java recorded_dir <"$version_file" || true
  [ "$recorded_version" = "$PINNED_VERSION" ] && [ "$recorded_dir" = "$install_dir" ] \
    && [ -n "$recorded_java" ] && [ -x "$recorded_java" ] \
    && [ -f "$install_dir/lib/$ARTIFACT_ID-$PINNED_VERSION.jar" ]
}

if installed; then
  echo "$launcher"
  exit 0
fi

# Test files run in parallel: one installs, the others wait for it and reuse its result.
mkdir -p "$tools_bin"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$tools_bin/.temporal-test-server.lock"
  flock 9
  if installed; then
    echo "$launcher"
    exit 0
  fi
fi

apt_updated=false
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "missing $*; install them (Java >= 17 and Maven) and run this again"
    exit 1
  fi
  if ! $apt_updated; then
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    apt_updated=true
  fi
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

# The major version of a java binary (8 for 1.8.x), or nothing.
java_major() {
  "$1" -version 2>&1 | sed -n '1s/.*version "\(1\.\)\{0,1\}\([0-9][0-9]*\).*/\2/p'
}

find_java() {
  local candidate
  for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java 2>/dev/null || true)"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    candidate="$(readlink -f "$candidate")"
    local major
    major="$(java_major "$candidate")"
    if [ -n "$major" ] && [ "$major" -ge 17 ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! java_bin="$(find_java)"; then
  apt_install default-jre-headless
  java_bin="$(find_java)" || { say "no java >= 17 found after installing default-jre-headless"; exit 1; }
fi
if ! command -v mvn >/dev/null 2>&1; then
  apt_install maven
fi

say "resolving $GROUP_ID:$ARTIFACT_ID:$PINNED_VERSION and its runtime dependencies with mvn (once)"
mkdir -p "$tools_dir/temporal-test-server" "$tools_bin"
work="$(mktemp -d "$tools_dir/temporal-test-server/.install.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cat >"$work/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.tools</groupId>
  <artifactId>temporal-test-server-install</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>$GROUP_ID</groupId>
      <artifactId>$ARTIFACT_ID</artifactId>
      <version>$PINNED_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-simple</artifactId>
      <version>$SLF4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF

if ! mvn -B -ntp -Dstyle.color=never -f "$work/pom.xml" "$DEPENDENCY_PLUGIN:copy-dependencies" \
  -DincludeScope=runtime -DoutputDirectory="$work/lib" >"$work/mvn.log" 2>&1; then
  cat "$work/mvn.log" >&2
  say "mvn could not resolve $GROUP_ID:$ARTIFACT_ID:$PINNED_VERSION (output above)"
  exit 1
fi
if [ ! -f "$work/lib/$ARTIFACT_ID-$PINNED_VERSION.jar" ]; then
  say "mvn finished but $ARTIFACT_ID-$PINNED_VERSION.jar is not among the copied jars"
  exit 1
fi
if command -v unzip >/dev/null 2>&1; then
  manifest_main="$(unzip -p "$work/lib/$ARTIFACT_ID-$PINNED_VERSION.jar" META-INF/MANIFEST.MF \
    | tr -d '\r' | sed -n 's/^Main-Class: *//p')"
  if [ "$manifest_main" != "$MAIN_CLASS" ]; then
    say "the jar's Main-Class is '$manifest_main', expected $MAIN_CLASS"
    exit 1
  fi
fi

rm -f "$version_file"
rm -rf "$install_dir"
mkdir -p "$install_dir"
mv "$work/lib" "$install_dir/lib"

# The JVM options the launcher uses. sdk-core gives the server 5 s to answer on its port;
# a cold JVM on a busy 2-core machine can come close, so: C1 only, the serial GC, and an
# application class-data archive (built below; the JVM ignores it, silently, if it does not fit).
jvm_opts=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err)
archive="$install_dir/app.jsa"

# Builds the archive by starting the server once on a free port and stopping it once it
# listens. It records the class path, so it is built where the jars stay. Best effort:
# without it the server only starts slower.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
build_class_archive() {
  local port pid i
  for i in $(seq 1 20); do
    port=$((20000 + RANDOM % 20000))
    port_in_use "$port" || break
  done
  "$java_bin" "${jvm_opts[@]}" -XX:ArchiveClassesAtExit="$archive" \
    -cp "$install_dir/lib/*" "$MAIN_CLASS" "$port" >"$work/archive.log" 2>&1 9>&- &
  pid=$!
  for i in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    if port_in_use "$port"; then
      sleep 1
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      [ -s "$archive" ] && return 0
      break
    fi
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$archive"
  return 1
}
say "building a class-data archive for a faster start"
if build_class_archive; then
  cds_opts=" \"-XX:SharedArchiveFile=$archive\""
else
  say "no class-data archive (the server starts slower without it): $(tail -n 3 "$work/archive.log" | tr '\n' ' ')"
  cds_opts=""
fi

cat >"$work/launcher" <<EOF
#!/bin/sh
# Written by scripts/install-temporal-test-server.sh: Temporal's time-skipping test server
# $GROUP_ID:$ARTIFACT_ID:$PINNED_VERSION on the JVM. sdk-core starts an existing-path test
# server as: temporal-test-server <port> [extraArgs...] (the server takes
# <port> [--enable-time-skipping]). exec, so the process sdk-core kills is the JVM itself.
exec "$java_bin" ${jvm_opts[*]}$cds_opts \${TEMPORAL_TEST_SERVER_JAVA_OPTS:-} \\
  -cp "$install_dir/lib/*" $MAIN_CLASS "\$@"
EOF
chmod +x "$work/launcher"
mv "$work/launcher" "$launcher"
stamp "$java_bin" >"$version_file"
say "installed $launcher ($PINNED_VERSION on $java_bin)"
echo "$launcher"
