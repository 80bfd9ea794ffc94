#!/usr/bin/env bash
# bootstrap/seed-secrets.sh: write the secrets that the LAN jobs (the cluster
# tier) read from the vault at job time, with `vault kv put`.
#
# Part of bootstrap/: a manual step run by an operator who is logged in to the
# vault; it never runs in CI. Values come from prompts or standard input, never
# from the command line, and are handed to vault on its standard input, so they
# never appear in a process list, a shell history or a file.
# See bootstrap/README.md and `seed-secrets.sh --help`.
set -euo pipefail

readonly PROG="seed-secrets.sh"
readonly DEFAULT_PREFIX="secret/infra/lan"

# The secrets, one entry per vault path (below the prefix):
#   name|keys|what it is and who reads it
# A key ending in * holds a multi-line value.
readonly CATALOGUE=(
  "proxmox|api_token_id api_token_secret|Proxmox VE API token (id USER@REALM!TOKEN and its secret); read by live/cluster/network and live/cluster/vms"
  "talos|secrets_yaml*|Talos machine secrets (output of talosctl gen secrets: the cluster PKI and tokens); read by live/cluster/os"
  "flux|ssh_private_key* known_hosts*|Flux deploy key of the GitOps repository and its server's SSH host key; read by live/cluster/gitops"
)

catalogue_help() {
  local entry name keys what key
  for entry in "${CATALOGUE[@]}"; do
    IFS='|' read -r name keys what <<<"${entry}"
    printf '  %s/%s\n' "${DEFAULT_PREFIX}" "${name}"
    for key in ${keys}; do
      if [[ "${key}" == *'*' ]]; then
        printf '      %s (multi-line)\n' "${key%'*'}"
      else
        printf '      %s\n' "${key}"
      fi
    done
    printf '      %s\n' "${what}" | fold -s -w 74 | sed -e 's/ *$//' -e '2,$s/^/      /'
  done
}

usage() {
  cat <<EOF
Usage: ${PROG} [--prefix PATH] [--only NAME]... [--dry-run]

Seed the vault paths that the LAN runner's jobs read (KV engine, version 1 or
2), with \`vault kv put PATH -\`. Log in first (VAULT_ADDR, vault login). Each
path is written whole: re-running replaces its keys (KV v2 keeps the previous
version).

Paths and keys, in the order the values are read:
$(catalogue_help)

Values are read from the terminal with prompts (not echoed) or, when standard
input is not a terminal, from standard input in the same order: a single-line
value is one line; a multi-line value is its lines followed by a line holding
only a dot (.). Values are never taken from arguments.

Options:
  --prefix PATH   vault path prefix (default: ${DEFAULT_PREFIX})
  --only NAME     seed only this path (proxmox, talos, flux); repeatable
  --dry-run       print the paths and key names that would be written; reads
                  no value and never prints one
  -h, --help      show this help

Exit status: 0 done, 1 failure, 2 bad usage or refused in CI.
EOF
}

die() {
  printf '%s: error: %s\n' "${PROG}" "$*" >&2
  exit 1
}

usage_error() {
  printf '%s: %s\n' "${PROG}" "$*" >&2
  printf "Usage: %s [--prefix PATH] [--only NAME]... [--dry-run]    (see '%s --help')\n" "${PROG}" "${PROG}" >&2
  exit 2
}

# A CI marker set to a non-empty value other than "false"/"0" means CI.
refuse_in_ci() {
  local var value lower
  for var in CI GITHUB_ACTIONS; do
    value="${!var:-}"
    lower="${value,,}"
    if [[ -n "${value}" && "${lower}" != "false" && "${lower}" != "0" ]]; then
      printf '%s: refusing to run in CI (%s=%s).\n' "${PROG}" "${var}" "${value}" >&2
      printf '%s\n' \
        "Seeding the vault is a manual step of bootstrap/: an operator types the" \
        "secrets in; the pipeline only reads them. See bootstrap/README.md." \
        "If this really is an operator's shell, unset ${var}." >&2
      exit 2
    fi
  done
}

# A JSON string literal of $1. Control characters other than newline, tab and
# carriage return are refused rather than encoded.
json_string() {
  local s="$1"
  s="${s//\\/\\\\}"
  s="${s//\"/\\\"}"
  s="${s//$'\n'/\\n}"
  s="${s//$'\t'/\\t}"
  s="${s//$'\r'/\\r}"
  if [[ "${s}" =~ [[:cntrl:]] ]]; then
    return 1
  fi
  printf '"%s"' "${s}"
}

interactive=0
[[ -t 0 ]] && interactive=1

# Read one value into the variable named $1; $2 is the prompt; $3 is 1 for a
# multi-line value (lines up to a line holding only ".").
read_value() {
  # The locals carry a prefix so that the nameref never points at one of them.
  local -n _rv_out="$1"
  local _rv_prompt="$2" _rv_multiline="$3" _rv_line _rv_value=""
  if ((_rv_multiline)); then
    ((interactive)) && printf '%s (paste it, then a line with only "."):\n' "${_rv_prompt}" >&2
    while true; do
      if ((interactive)); then
        IFS= read -rs _rv_line || break
      else
        IFS= read -r _rv_line || break
      fi
      [[ "${_rv_line}" == "." ]] && break
      _rv_value+="${_rv_line}"$'\n'
    done
  else
    if ((interactive)); then
      IFS= read -rs -p "${_rv_prompt}: " _rv_value || true
      printf '\n' >&2
    else
      IFS= read -r _rv_value || true
    fi
  fi
  # shellcheck disable=SC2034 # _rv_out is a nameref to the caller's variable
  _rv_out="${_rv_value}"
}

prefix="${DEFAULT_PREFIX}"
only=()
dry_run=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --prefix)
      [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || usage_error "option --prefix needs a value"
      prefix="${2%/}"
      shift 2
      ;;
    --only)
      [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || usage_error "option --only needs a value"
      only+=("$2")
      shift 2
      ;;
    --dry-run)
      dry_run=1
      shift
      ;;
    -*=* | [!-]*)
      # Not echoed: it may be a secret typed in the wrong place.
      usage_error "unexpected argument (not shown); values are read from prompts or stdin, never from arguments"
      ;;
    *) usage_error "unknown option: $1" ;;
  esac
done

[[ "${prefix}" =~ ^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$ ]] || usage_error "--prefix is not a vault path: ${prefix}"

# The catalogue entries to seed.
selected=()
for entry in "${CATALOGUE[@]}"; do
  name="${entry%%|*}"
  if ((${#only[@]} == 0)); then
    selected+=("${entry}")
    continue
  fi
  for wanted in "${only[@]}"; do
    if [[ "${wanted}" == "${name}" ]]; then
      selected+=("${entry}")
      break
    fi
  done
done
for wanted in "${only[@]}"; do
  found=0
  for entry in "${CATALOGUE[@]}"; do
    if [[ "${entry%%|*}" == "${wanted}" ]]; then
      found=1
    fi
  done
  ((found)) || usage_error "--only: no such secret path: ${wanted} (known: proxmox, talos, flux)"
done

refuse_in_ci

if ((dry_run)); then
  printf '# dry run: no value is read, nothing is written\n'
  for entry in "${selected[@]}"; do
    IFS='|' read -r name keys _ <<<"${entry}"
    printf 'would write %s/%s (keys: %s)\n' "${prefix}" "${name}" "$(printf '%s' "${keys//'*'/}" | sed 's/ /, /g')"
  done
  exit 0
fi

command -v vault >/dev/null 2>&1 || die "the vault CLI is required (https://developer.hashicorp.com/vault/install)"
[[ -n "${VAULT_ADDR:-}" ]] || printf '%s: warning: VAULT_ADDR is not set; vault uses its default address\n' "${PROG}" >&2
vault token lookup </dev/null >/dev/null 2>&1 || die "not logged in to the vault: run 'vault login' first"

for entry in "${selected[@]}"; do
  IFS='|' read -r name keys _ <<<"${entry}"
  path="${prefix}/${name}"
  json="{"
  key_names=()
  for key in ${keys}; do
    multiline=0
    if [[ "${key}" == *'*' ]]; then
      multiline=1
      key="${key%'*'}"
    fi
    value=""
    read_value value "${path} ${key}" "${multiline}"
    [[ -n "${value//[[:space:]]/}" ]] || die "no value for ${key} of ${path} (nothing was written for it)"
    encoded="$(json_string "${value}")" || die "the value of ${key} of ${path} holds control characters"
    [[ "${json}" == "{" ]] || json+=","
    json+="\"${key}\":${encoded}"
    key_names+=("${key}")
    value=""
    encoded=""
  done
  json+="}"
  # printf is a shell builtin: the values reach vault through a pipe only.
  printf '%s' "${json}" | vault kv put "${path}" - >/dev/null ||
    die "vault kv put ${path} failed (check your token's policy for ${path})"
  json=""
  printf 'wrote %s (keys: %s)\n' "${path}" "$(IFS=','; printf '%s' "${key_names[*]}" | sed 's/,/, /g')"
done
