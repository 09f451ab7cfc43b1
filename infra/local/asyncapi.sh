#!/usr/bin/env bash
# Validates docs/asyncapi.yaml (the market and user data streams) with the AsyncAPI parser: @asyncapi/parser, pinned
# by infra/local/asyncapi/package-lock.json and installed with npm ci into .run/asyncapi-parser. Fails on any error
# diagnostic. `make test` runs it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
cd "$ROOT"

SRC=$HERE/asyncapi
DIR=$ROOT/.run/asyncapi-parser
DOC=${1:-docs/asyncapi.yaml}

command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
want=$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ ! -f $DIR/.stamp || $(cat "$DIR/.stamp") != "$want" || ! -d $DIR/node_modules/@asyncapi/parser ]]; then
  log "installing the AsyncAPI parser into .run/asyncapi-parser (pinned: infra/local/asyncapi/package-lock.json)"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$DIR/.stamp"
fi
cp "$SRC/validate.mjs" "$DIR/validate.mjs"
log "AsyncAPI parser: $DOC"
node "$DIR/validate.mjs" "$ROOT/$DOC"
