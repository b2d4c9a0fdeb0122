#!/usr/bin/env bash
# Container entrypoint. For `listen` (the default command) it:
#   1. creates the node's identity in $CLAWPEER_HOME on first start (the key never leaves the
#      volume and never appears on a command line);
#   2. publishes the node id (public) as $CLAWPEER_IDS_DIR/$CLAWPEER_NAME.id on a volume the
#      peers share;
#   3. pins every other id found there, named after its file, dialled at NAME:$CLAWPEER_PORT
#      (the compose service name), waiting up to $CLAWPEER_PAIR_WAIT_S seconds for the names
#      listed in $CLAWPEER_PEERS to appear;
#   4. execs `clawpeer listen ...`, so clawpeer gets SIGTERM/SIGINT directly and stops cleanly.
# Any other command (`relay ...`, `ping ...`) runs clawpeer with those arguments and nothing else.
set -euo pipefail

export CLAWPEER_HOME="${CLAWPEER_HOME:-/data}"
ids_dir="${CLAWPEER_IDS_DIR:-/ids}"
port="${CLAWPEER_PORT:-7700}"
wait_s="${CLAWPEER_PAIR_WAIT_S:-60}"
expected="${CLAWPEER_PEERS:-}"
name="${CLAWPEER_NAME:-${HOSTNAME:-node}}"

log() { printf 'clawpeer-entrypoint: %s\n' "$*" >&2; }

if [ "$#" -eq 0 ]; then set -- listen --host 0.0.0.0 --port "$port"; fi
if [ "$1" != "listen" ]; then exec clawpeer "$@"; fi

case "$name" in
  ''|*[!A-Za-z0-9._-]*) log "CLAWPEER_NAME '$name' must be letters, digits, '.', '_' or '-'"; exit 2 ;;
esac
case "$wait_s" in
  ''|*[!0-9]*) log "CLAWPEER_PAIR_WAIT_S '$wait_s' must be a whole number of seconds"; exit 2 ;;
esac

# 1. identity, on first start only
if [ ! -f "$CLAWPEER_HOME/identity.key" ]; then
  log "no identity in $CLAWPEER_HOME: creating one"
  clawpeer init >&2
fi
my_id="$(clawpeer id)"
log "this node is $name ($my_id)"

# 2. publish our id; write-then-rename so a peer never reads half a line
if [ -d "$ids_dir" ] && [ -w "$ids_dir" ]; then
  tmp="$ids_dir/.$name.id.$$"
  printf '%s\n' "$my_id" > "$tmp"
  mv -f "$tmp" "$ids_dir/$name.id"
else
  log "$ids_dir is not a writable directory: not publishing this node's id (pair by hand)"
fi

# 3. pair with every other published id
pair_with() { # NAME ID
  local peer="$1" id="$2" addr="$1:$port"
  if clawpeer pair add "$id" --name "$peer" --addr "$addr" >/dev/null 2>&1; then
    log "paired with $peer ($id) at $addr"
    return 0
  fi
  # The name is pinned to an older id (that peer's volume was recreated): re-pin.
  if clawpeer pair remove "$peer" >/dev/null 2>&1 && clawpeer pair add "$id" --name "$peer" --addr "$addr" >/dev/null; then
    log "re-paired with $peer: its id changed to $id"
    return 0
  fi
  log "could not pair with $peer ($id)"
  return 1
}

pair_found() {
  local file peer id
  for file in "$ids_dir"/*.id; do
    [ -f "$file" ] || continue
    peer="$(basename "$file" .id)"
    [ "$peer" = "$name" ] && continue
    id="$(tr -d '[:space:]' < "$file")"
    [ -n "$id" ] || continue
    pair_with "$peer" "$id" || true
  done
}

missing_peers() {
  local peer out=""
  for peer in $expected; do
    [ -f "$ids_dir/$peer.id" ] || out="$out $peer"
  done
  printf '%s' "${out# }"
}

if [ -d "$ids_dir" ]; then
  deadline=$((SECONDS + wait_s))
  missing="$(missing_peers)"
  while [ -n "$missing" ] && [ "$SECONDS" -lt "$deadline" ]; do
    log "waiting for the id of: $missing"
    sleep 1
    missing="$(missing_peers)"
  done
  if [ -n "$missing" ]; then
    log "gave up after ${wait_s}s waiting for: $missing (pair later: clawpeer pair add <ID> --name <NAME> --addr <NAME>:$port)"
  fi
  pair_found
fi

# 4. become the listener
exec clawpeer "$@"
