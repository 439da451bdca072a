#!/usr/bin/env bash
# Installs code-server (a real VS Code, from npm) and playwright-core for the end-to-end test.
# @vscode/ripgrep's install step downloads rg from GitHub, which is out of reach here: it gets
# Debian's rg, packed the way it expects, from its cache folder instead.
set -euo pipefail
cd "$(dirname "$0")"
rg_bin=$(command -v rg)
cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
tarball="$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [ ! -f "$tarball" ]; then
  mkdir -p "$cache"
  staging=$(mktemp -d)
  mkdir -p "$staging/bin" && cp "$rg_bin" "$staging/bin/rg" && cp "$rg_bin" "$staging/rg"
  tar -czf "$tarball" -C "$staging" rg bin
  rm -rf "$staging"
fi
npm_config_unsafe_perm=true npm_config_yes=true npm install --no-audit --no-fund --loglevel=error
