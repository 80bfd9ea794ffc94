#!/usr/bin/env bash
# bootstrap/lan-runner/install.sh: install a GitHub Actions self-hosted runner
# on the LAN host as a systemd service under an unprivileged user.
#
# Part of bootstrap/: a manual, one-time step run as root on the LAN host. It
# never runs in CI. See bootstrap/README.md and `install.sh --help`.
set -euo pipefail

readonly DEFAULT_RUNNER_VERSION="2.337.0"
readonly DEFAULT_USER="gh-runner"
readonly DEFAULT_LABELS="self-hosted,lan"
readonly DEFAULT_BASE_DIR="/opt/gh-runner"
readonly SYSTEMD_DIR="${SYSTEMD_UNIT_DIR:-/etc/systemd/system}"
readonly PROG="install.sh"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly UNIT_TEMPLATE="${script_dir}/actions-runner.service.in"

usage() {
  cat <<EOF
Usage: ${PROG} --url URL --name NAME [options]

Install a GitHub Actions self-hosted runner as a systemd service running as an
unprivileged user, for the jobs that must run inside the home network (the
cluster tier). Run it as root on the LAN host; it never runs in CI.

The registration token (repository or organisation Settings > Actions >
Runners > New self-hosted runner; valid one hour) is read from standard input,
or from --token-file, which is deleted as soon as it has been read. It is
passed to config.sh in its environment, never on a command line, and never
stored: the runner's own .credentials are all it keeps.

Required:
  --url URL             repository or organisation URL, https://github.com/ORG[/REPO]
  --name NAME           runner name (letters, digits, . _ -); also names the unit
                        actions-runner-NAME.service

Options:
  --user USER           unprivileged user the runner runs as (default: ${DEFAULT_USER});
                        created as a system user if missing
  --labels L            comma-separated labels (default: ${DEFAULT_LABELS})
  --runner-version V    runner release to download (default: ${DEFAULT_RUNNER_VERSION})
  --runner-archive PATH use this actions-runner-linux-*.tar.gz instead of downloading
  --sha256 HASH         check the archive against this SHA-256 before unpacking
  --dir DIR             base directory; the runner goes in DIR/NAME
                        (default: ${DEFAULT_BASE_DIR})
  --token-file PATH     read the registration token from PATH, then delete PATH
  --persistent          keep the runner registered across jobs and let it
                        update itself (default: --ephemeral, one job then
                        deregister, with self-update off)
  --dry-run             print each command instead of running it; reads no
                        token and changes nothing
  -h, --help            show this help

Environment: SYSTEMD_UNIT_DIR, where the unit is written (default:
/etc/systemd/system).

Ephemeral (default): the runner takes exactly one job, then deregisters and the
unit stays stopped; run ${PROG} again with a new token for the next one.

Examples:
  ${PROG} --url https://github.com/example-org/infrastructure --name lan-1 < token.txt
  ${PROG} --url https://github.com/example-org --name lan-1 --token-file ./registration-token --persistent
  ${PROG} --url https://github.com/example-org/infrastructure --name lan-1 --dry-run

Exit status: 0 done, 1 failure, 2 bad usage or refused in CI.
EOF
}

die() {
  printf '%s: error: %s\n' "${PROG}" "$*" >&2
  exit 1
}

usage_error() {
  printf '%s: %s\n' "${PROG}" "$*" >&2
  printf 'Usage: %s --url URL --name NAME [--user USER] [--labels L] [--runner-version V]\n' "${PROG}" >&2
  printf '       [--runner-archive PATH] [--sha256 HASH] [--dir DIR] [--token-file PATH]\n' >&2
  printf "       [--persistent] [--dry-run]    (see '%s --help')\n" "${PROG}" >&2
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
        "Installing the LAN runner is a manual, one-time step of bootstrap/: it runs" \
        "as root on the LAN host with a registration token, never in the pipeline." \
        "See bootstrap/README.md. If this really is the LAN host, unset ${var}." >&2
      exit 2
    fi
  done
}

# Quote one word for display the way a shell would read it back.
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=,@+%-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

# The words of a command, quoted, on one line.
render() {
  local word line=""
  for word in "$@"; do
    line+="${line:+ }$(quote "${word}")"
  done
  printf '%s' "${line}"
}

show() {
  printf '+ %s\n' "$(render "$@")"
}

# Run a command, or in --dry-run print it.
run() {
  if ((dry_run)); then
    show "$@"
  else
    "$@"
  fi
}

# Run a command in a directory, or in --dry-run print it.
run_in() {
  local dir="$1"
  shift
  if ((dry_run)); then
    printf '+ cd %s && %s\n' "$(quote "${dir}")" "$(render "$@")"
  else
    (cd "${dir}" && "$@")
  fi
}

need_value() {
  [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || usage_error "option $1 needs a value"
}

url=""
name=""
user="${DEFAULT_USER}"
labels="${DEFAULT_LABELS}"
runner_version="${DEFAULT_RUNNER_VERSION}"
runner_archive=""
sha256=""
base_dir="${DEFAULT_BASE_DIR}"
token_file=""
ephemeral=1
dry_run=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --url) need_value "$@"; url="$2"; shift 2 ;;
    --name) need_value "$@"; name="$2"; shift 2 ;;
    --user) need_value "$@"; user="$2"; shift 2 ;;
    --labels) need_value "$@"; labels="$2"; shift 2 ;;
    --runner-version) need_value "$@"; runner_version="$2"; shift 2 ;;
    --runner-archive) need_value "$@"; runner_archive="$2"; shift 2 ;;
    --sha256) need_value "$@"; sha256="$2"; shift 2 ;;
    --dir) need_value "$@"; base_dir="$2"; shift 2 ;;
    --token-file) need_value "$@"; token_file="$2"; shift 2 ;;
    --ephemeral) ephemeral=1; shift ;;
    --persistent) ephemeral=0; shift ;;
    --dry-run) dry_run=1; shift ;;
    *) usage_error "unknown argument: $1" ;;
  esac
done

[[ -n "${url}" ]] || usage_error "--url is required"
[[ -n "${name}" ]] || usage_error "--name is required"
[[ "${url}" =~ ^https://[^[:space:]/]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?/?$ ]] ||
  usage_error "--url must be https://HOST/ORG or https://HOST/ORG/REPO, not: ${url}"
[[ "${name}" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]] ||
  usage_error "--name must be letters, digits, '.', '_' or '-': ${name}"
[[ "${user}" =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || usage_error "--user is not a valid user name: ${user}"
[[ "${user}" != "root" ]] || usage_error "--user root defeats the point: pick an unprivileged user"
[[ "${labels}" =~ ^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$ ]] ||
  usage_error "--labels must be a comma-separated list of words: ${labels}"
[[ "${runner_version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  usage_error "--runner-version must look like ${DEFAULT_RUNNER_VERSION}: ${runner_version}"
[[ -z "${sha256}" || "${sha256}" =~ ^[0-9a-fA-F]{64}$ ]] || usage_error "--sha256 must be 64 hex digits"
[[ "${base_dir}" == /* ]] || usage_error "--dir must be an absolute path: ${base_dir}"

refuse_in_ci

readonly runner_dir="${base_dir%/}/${name}"
readonly unit_name="actions-runner-${name}.service"
readonly unit_path="${SYSTEMD_DIR}/${unit_name}"

[[ -f "${UNIT_TEMPLATE}" ]] || die "unit template not found: ${UNIT_TEMPLATE}"
if [[ -n "${runner_archive}" && ! -f "${runner_archive}" ]]; then
  die "runner archive not found: ${runner_archive}"
fi
if ((!dry_run)); then
  [[ "${EUID}" -eq 0 ]] || die "run as root (it creates a user, a directory and a systemd unit); try --dry-run first"
  for tool in runuser systemctl tar useradd install; do
    command -v "${tool}" >/dev/null 2>&1 || die "${tool} is required"
  done
  if [[ -z "${runner_archive}" ]]; then
    command -v curl >/dev/null 2>&1 || die "curl is required to download the runner (or pass --runner-archive)"
  fi
fi

# Everything that can refuse comes before the token is read (and its file deleted).
if [[ -e "${runner_dir}/.runner" ]]; then
  msg="${runner_dir} already holds a configured runner; remove it first: runuser -u ${user} -- ${runner_dir}/config.sh remove (with a removal token)"
  if ((dry_run)); then
    printf '# warning: %s\n' "${msg}"
  else
    die "${msg}"
  fi
fi

# --- The registration token: read once, file deleted at once, never stored ---
token=""
read_token() {
  if [[ -n "${token_file}" ]]; then
    [[ -f "${token_file}" ]] || die "token file not found: ${token_file}"
    IFS= read -r token <"${token_file}" || true
    if command -v shred >/dev/null 2>&1; then
      shred --remove --zero "${token_file}" 2>/dev/null || rm -f -- "${token_file}"
    else
      rm -f -- "${token_file}"
    fi
  else
    if [[ -t 0 ]]; then
      IFS= read -rs -p "Registration token: " token || true
      printf '\n' >&2
    else
      IFS= read -r token || true
    fi
  fi
  token="${token//[[:space:]]/}"
  [[ -n "${token}" ]] || die "no registration token given (stdin or --token-file)"
}

if ((dry_run)); then
  printf '# dry run: nothing is read, written or started\n'
  if [[ -n "${token_file}" ]]; then
    printf '# the registration token would be read from %s, which is then deleted:\n' "${token_file}"
    show shred --remove --zero "${token_file}"
  else
    printf '# the registration token would be read from standard input\n'
  fi
else
  read_token
fi

# --- The unprivileged user and the runner directory ---
if id -u "${user}" >/dev/null 2>&1; then
  printf '# user %s exists\n' "${user}"
else
  run useradd --system --user-group --home-dir "${base_dir}" --no-create-home \
    --shell /usr/sbin/nologin --comment "GitHub Actions runner" "${user}"
fi
run install -d -o "${user}" -g "${user}" -m 0750 "${base_dir}"
run install -d -o "${user}" -g "${user}" -m 0750 "${runner_dir}"

# --- The runner release ---
case "$(uname -m)" in
  x86_64 | amd64) arch="x64" ;;
  aarch64 | arm64) arch="arm64" ;;
  armv7l | armv6l) arch="arm" ;;
  *) die "unsupported machine: $(uname -m)" ;;
esac
archive="${runner_archive}"
download_dir=""
cleanup() {
  if [[ -n "${download_dir}" ]]; then
    rm -rf -- "${download_dir}"
  fi
}
trap cleanup EXIT
if [[ -z "${archive}" ]]; then
  release_url="https://github.com/actions/runner/releases/download/v${runner_version}/actions-runner-linux-${arch}-${runner_version}.tar.gz"
  if ((dry_run)); then
    archive="<download dir>/actions-runner-linux-${arch}-${runner_version}.tar.gz"
  else
    download_dir="$(mktemp -d)"
    archive="${download_dir}/actions-runner-linux-${arch}-${runner_version}.tar.gz"
  fi
  run curl --fail --silent --show-error --location --proto '=https' --output "${archive}" "${release_url}"
fi
if [[ -n "${sha256}" ]]; then
  if ((dry_run)); then
    printf '# the archive would be checked against SHA-256 %s\n' "${sha256}"
  else
    printf '%s  %s\n' "${sha256,,}" "${archive}" | sha256sum --check --quiet - ||
      die "SHA-256 of ${archive} does not match --sha256"
  fi
fi
run tar -xzf "${archive}" -C "${runner_dir}" --no-same-owner
run chown -R "${user}:${user}" "${runner_dir}"

# --- Registration ---
config_args=(--unattended --url "${url}" --name "${name}" --labels "${labels}" --work _work --replace)
if ((ephemeral)); then
  # One job, then deregister; a self-update would spend that one job.
  config_args+=(--ephemeral --disableupdate)
  mode="ephemeral"
else
  mode="persistent"
fi
if ((dry_run)); then
  printf '# the token would be passed in the environment (ACTIONS_RUNNER_INPUT_TOKEN), not on the command line\n'
  run_in "${runner_dir}" runuser -u "${user}" -- ./config.sh "${config_args[@]}"
else
  export ACTIONS_RUNNER_INPUT_TOKEN="${token}"
  status=0
  run_in "${runner_dir}" runuser -u "${user}" -- ./config.sh "${config_args[@]}" || status=$?
  unset ACTIONS_RUNNER_INPUT_TOKEN
  token=""
  ((status == 0)) || die "config.sh failed (exit ${status}); get a new registration token and run ${PROG} again"
fi

# --- The systemd unit ---
# The template's own header comment (which names the placeholders) is dropped.
unit="# Generated by bootstrap/lan-runner/install.sh from actions-runner.service.in:
# re-run install.sh rather than editing this file.
$(sed '1,/^\[Unit\]/{/^#/d;}' "${UNIT_TEMPLATE}")"
unit="${unit//@RUNNER_NAME@/${name}}"
unit="${unit//@RUNNER_USER@/${user}}"
unit="${unit//@RUNNER_DIR@/${runner_dir}}"
unit="${unit//@RUNNER_MODE@/${mode}}"
if ((dry_run)); then
  printf '# would write %s:\n' "${unit_path}"
  printf '%s\n' "${unit}" | sed 's/^/#   /'
else
  printf '%s\n' "${unit}" >"${unit_path}.tmp"
  chmod 0644 "${unit_path}.tmp"
  mv -f -- "${unit_path}.tmp" "${unit_path}"
fi
run systemctl daemon-reload
run systemctl enable --now "${unit_name}"

if ((!dry_run)); then
  printf 'runner %s installed (%s, labels %s): systemctl status %s\n' "${name}" "${mode}" "${labels}" "${unit_name}"
fi
