# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# TLS: a private CA and every party's certificate (DESIGN §18). Sourced by scripts/cluster.sh,
# which says what each command does.

# Every certificate of the server names these (and localhost, 127.0.0.1): clients check the
# frontend's against TLS_SERVER_NAME, the services each other's against TLS_INTERNODE_NAME.
TLS_SERVER_NAME="sandboxplane-temporal"
TLS_INTERNODE_NAME="sandboxplane-internode"
# Client certificates, by file name (CN sandboxplane-NAME): the plane's workers, operators
# (sandboxctl, the temporal CLI, this script), `sandboxctl gateway`, the UI server.
TLS_CLIENTS=(worker operator gateway ui)
TLS_CA_DAYS=3650
TLS_LEAF_DAYS=397
TLS_RENEW_SECONDS=$((30 * 86400))  # a certificate with less left is made again by `up`
TLS_REMADE=()                        # what this `up` made again while the server ran

tls_cert() { echo "$TLS_DIR/$1.pem"; }
tls_key() { echo "$TLS_DIR/$1-key.pem"; }

# The CA: made when missing (every certificate is then made again, signed by the new one).
make_ca() {
  [[ -s "$TLS_DIR/ca.pem" && -s "$TLS_DIR/ca-key.pem" ]] && return 0
  say "making the cluster's CA in $TLS_DIR (ca.pem; its key ca-key.pem signs every certificate here)"
  local conf
  conf="$(mktemp)"
  printf '[req]\ndistinguished_name = dn\n[dn]\n[ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n' >"$conf"
  if ! (umask 077; openssl req -x509 -new -newkey rsa:2048 -nodes -sha256 -days "$TLS_CA_DAYS" -config "$conf" -extensions ca \
      -subj "/O=sandboxplane/CN=sandboxplane cluster CA" -keyout "$TLS_DIR/ca-key.pem.partial" -out "$TLS_DIR/ca.pem.partial" 2>"$TLS_DIR/openssl.log"); then
    rm -f "$conf"
    cat "$TLS_DIR/openssl.log" >&2
    fail "openssl could not make the CA (output above)"
  fi
  rm -f "$conf"
  chmod 0600 "$TLS_DIR/ca-key.pem.partial"
  chmod 0644 "$TLS_DIR/ca.pem.partial"
  mv -f "$TLS_DIR/ca-key.pem.partial" "$TLS_DIR/ca-key.pem"
  mv -f "$TLS_DIR/ca.pem.partial" "$TLS_DIR/ca.pem"
}

# make_leaf NAME CN EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]: NAME.pem and NAME-key.pem (0600),
# signed by the CA; kept while they verify against it with more than 30 days left.
make_leaf() {
  local name="$1" cn="$2" usage="$3" san="${4:-}" cert key ext
  cert="$(tls_cert "$name")"; key="$(tls_key "$name")"
  if [[ -s "$cert" && -s "$key" ]] && openssl verify -CAfile "$TLS_DIR/ca.pem" "$cert" >/dev/null 2>&1 &&
      openssl x509 -in "$cert" -noout -checkend "$TLS_RENEW_SECONDS" >/dev/null 2>&1; then
    return 0
  fi
  [[ -s "$cert" ]] && TLS_REMADE+=("$name")
  say "making certificate $name (CN=$cn) in $TLS_DIR"
  ext="$(mktemp)"
  printf 'basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = %s\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n' "$usage" >"$ext"
  [[ -z "$san" ]] || printf 'subjectAltName = %s\n' "$san" >>"$ext"
  if ! { (umask 077; openssl req -new -newkey rsa:2048 -nodes -subj "/O=sandboxplane/CN=$cn" -keyout "$key.partial" -out "$TLS_DIR/$name.csr") &&
      openssl x509 -req -in "$TLS_DIR/$name.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca-key.pem" -set_serial "0x$(openssl rand -hex 16)" \
        -days "$TLS_LEAF_DAYS" -sha256 -extfile "$ext" -out "$cert.partial"; } 2>"$TLS_DIR/openssl.log"; then
    rm -f "$ext" "$TLS_DIR/$name.csr" "$key.partial" "$cert.partial"
    cat "$TLS_DIR/openssl.log" >&2
    fail "openssl could not make certificate $name (output above)"
  fi
  rm -f "$ext" "$TLS_DIR/$name.csr"
  chmod 0600 "$key.partial"
  chmod 0644 "$cert.partial"
  mv -f "$key.partial" "$key"
  mv -f "$cert.partial" "$cert"
}

# Made once and kept (`up` makes again only what is missing, expiring or not signed by the CA):
# the frontend's certificate, the internode one (history, matching and worker serve with it,
# and every service presents it to the others and, as the server's system worker, to the
# frontend), and a client certificate for each of TLS_CLIENTS.
make_tls() {
  command -v openssl >/dev/null 2>&1 || fail "no openssl: the cluster's certificates are made with it (apt-get install openssl)"
  mkdir -p "$TLS_DIR"
  chmod 0700 "$TLS_DIR"
  make_ca
  local hosts="DNS:localhost,IP:$HOST" name
  make_leaf server "$TLS_SERVER_NAME" serverAuth "DNS:$TLS_SERVER_NAME,$hosts"
  make_leaf internode "$TLS_INTERNODE_NAME" serverAuth,clientAuth "DNS:$TLS_INTERNODE_NAME,DNS:$TLS_SERVER_NAME,$hosts"
  for name in "${TLS_CLIENTS[@]}"; do make_leaf "$name" "sandboxplane-$name" clientAuth; done
  rm -f "$TLS_DIR/openssl.log"
  if ((${#TLS_REMADE[@]})); then
    say "made again: ${TLS_REMADE[*]}; processes that run already keep the old ones until they start again (\`cluster.sh down\`, then \`up\`)"
  fi
}

# The temporal CLI's flags for a client certificate (operator by default).
tls_cli_flags() {
  local name="${1:-operator}"
  echo "--tls-cert-path=$(tls_cert "$name")"
  echo "--tls-key-path=$(tls_key "$name")"
  echo "--tls-ca-path=$TLS_DIR/ca.pem"
  echo "--tls-server-name=$TLS_SERVER_NAME"
}

# sandboxctl's variables for a client certificate, as KEY=VALUE lines.
tls_plane_env() {
  local name="$1"
  echo "SANDBOXPLANE_TEMPORAL_TLS_CERT=$(tls_cert "$name")"
  echo "SANDBOXPLANE_TEMPORAL_TLS_KEY=$(tls_key "$name")"
  echo "SANDBOXPLANE_TEMPORAL_TLS_CA=$TLS_DIR/ca.pem"
  echo "SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME=$TLS_SERVER_NAME"
}
