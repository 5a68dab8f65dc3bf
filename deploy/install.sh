#!/bin/bash
# Installs gate and its system files: the binary, the systemd unit, the
# sysusers.d, tmpfiles.d and udev entries, the example configuration and the docs.
# Then creates the user and groups, /run/gate and /var/lib/gate, and reloads
# udev and systemd. It never enables or starts gate.service: that needs
# /etc/gate/gate.toml (and, with an MQTT user name, the password credential)
# first, so it prints the steps that are left instead.
#
#   sudo deploy/install.sh [--binary PATH] [--dry-run]
#   DESTDIR=/tmp/pkgroot deploy/install.sh --binary PATH   # packaging: files only
#
# See deploy/README.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: install.sh [--binary PATH] [--prefix DIR] [--dry-run] [--help]

  --binary PATH  the gate binary to install (default: .build/release/gate,
                 else .build/debug/gate, in the repository)
  --prefix DIR   where bin/ and share/ go (default: /usr)
  --dry-run      print what would be done, change nothing
  DESTDIR=DIR    install below DIR (for packages): files only, no users,
                 no folders in /run, no reloads
USAGE
}

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
destdir=${DESTDIR:-}
prefix=/usr
binary=
dry_run=false

while (($# > 0)); do
    case $1 in
        --binary) binary=${2:?--binary needs a path}; shift 2 ;;
        --binary=*) binary=${1#--binary=}; shift ;;
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --dry-run|-n) dry_run=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) printf 'install.sh: unknown argument: %s\n' "$1" >&2; usage >&2; exit 64 ;;
    esac
done

if [[ -z $binary ]]; then
    for candidate in "$repo/.build/release/gate" "$repo/.build/debug/gate"; do
        if [[ -x $candidate ]]; then binary=$candidate; break; fi
    done
fi
if [[ -z $binary || ! -x $binary ]]; then
    printf 'install.sh: no gate binary%s; build one (swift build -c release) or pass --binary PATH\n' \
        "${binary:+ at $binary}" >&2
    exit 66
fi

if [[ -z $destdir ]] && ! $dry_run && ((EUID != 0)); then
    printf 'install.sh: run as root (sudo), or with --dry-run, or with DESTDIR= for a package\n' >&2
    exit 77
fi

# Prints a command; runs it unless --dry-run.
run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    if ! $dry_run; then "$@"; fi
}

systemd_dir=/usr/lib/systemd/system
user_unit_dir=/usr/lib/systemd/user
sysusers_dir=/usr/lib/sysusers.d
tmpfiles_dir=/usr/lib/tmpfiles.d
udev_dir=/usr/lib/udev/rules.d
doc_dir=$prefix/share/doc/gate

# 1. Files.
run install -d -m 0755 "$destdir$prefix/bin" "$destdir$systemd_dir" "$destdir$user_unit_dir" "$destdir$sysusers_dir" \
    "$destdir$tmpfiles_dir" "$destdir$udev_dir" "$destdir$doc_dir/examples"
run install -m 0755 "$binary" "$destdir$prefix/bin/gate"
run install -m 0644 "$here/systemd/gate.service" "$destdir$systemd_dir/gate.service"
run install -m 0644 "$here/systemd/gate-user.service" "$destdir$user_unit_dir/gate-user.service"
run install -m 0644 "$here/systemd/gate.sysusers" "$destdir$sysusers_dir/gate.conf"
run install -m 0644 "$here/systemd/gate.tmpfiles" "$destdir$tmpfiles_dir/gate.conf"
run install -m 0644 "$here/systemd/99-gate-gpio.rules" "$destdir$udev_dir/99-gate-gpio.rules"
# The docs and examples at the Debian package's paths: gate doctor's fixes name them.
run install -m 0644 "$here/gate.toml.example" "$destdir$doc_dir/examples/gate.toml"
run install -m 0644 "$repo/README.md" "$destdir$doc_dir/README.md"
run install -m 0644 "$repo/docs/GUIDE.md" "$destdir$doc_dir/guide.md"
run install -m 0644 "$here/README.md" "$destdir$doc_dir/deploy.md"
run install -m 0644 "$here/credentials/README.md" "$destdir$doc_dir/credentials.md"
run install -m 0644 "$here/homeassistant/README.md" "$destdir$doc_dir/homeassistant.md"
run install -m 0644 "$here/homeassistant/mosquitto.acl" "$destdir$doc_dir/examples/mosquitto-homeassistant.acl"
if [[ $prefix != /usr ]]; then
    printf 'note: the unit runs /usr/bin/gate; with --prefix %s add a drop-in with ExecStart=%s/bin/gate daemon\n' \
        "$prefix" "$prefix"
fi

if [[ -n $destdir ]]; then
    printf '\nFiles installed below %s. The package must run on installation:\n' "$destdir"
    printf '  systemd-sysusers gate.conf; systemd-tmpfiles --create gate.conf;\n'
    printf '  udevadm control --reload; udevadm trigger --subsystem-match=gpio --action=change;\n'
    printf '  systemctl daemon-reload\n'
    exit 0
fi

# 2. The user, the groups and the folders, now rather than at the next boot.
run systemd-sysusers gate.conf
run systemd-tmpfiles --create gate.conf
if command -v udevadm >/dev/null 2>&1; then
    run udevadm control --reload
    run udevadm trigger --subsystem-match=gpio --action=change
else
    printf 'note: no udevadm here; the GPIO rule applies from the next boot\n'
fi
run systemctl daemon-reload

# 3. What is left for the administrator.
config=/etc/gate/gate.toml
printf '\ngate is installed. Next steps (%s/deploy.md):\n' "$doc_dir"
step=1
if [[ ! -e $config ]]; then
    printf '  %d. Write the configuration (every key: %s/examples/gate.toml), then check it:\n' "$step" "$doc_dir"
    printf '       sudo gate config init --udp ESP32-ADDRESS   # writes %s\n' "$config"
    printf '       gate doctor\n'
    step=$((step + 1))
else
    printf '  (%s exists and was left unchanged: gate config check --config %s)\n' "$config" "$config"
fi
if [[ ! -e /etc/credstore.encrypted/mqtt-password && ! -e /etc/credstore/mqtt-password ]]; then
    printf '  %d. If [mqtt] has a username, store the MQTT password as the credential\n' "$step"
    printf '     mqtt-password in /etc/credstore.encrypted/ (%s/credentials.md).\n' "$doc_dir"
    step=$((step + 1))
fi
printf '  %d. Let desktop users share /run/gate (lock and status) with the service:\n' "$step"
printf '       sudo usermod -aG gate USER   # then log out and in again\n'
step=$((step + 1))
if systemctl is-enabled --quiet gate.service 2>/dev/null; then
    printf '  %d. gate.service is already enabled; use the new files with:\n' "$step"
    printf '       sudo systemctl restart gate.service\n'
else
    printf '  %d. Start the push button service and enable it at boot:\n' "$step"
    printf '       sudo systemctl enable --now gate.service\n'
    printf '       journalctl -u gate.service -f\n'
fi
step=$((step + 1))
printf '  %d. On a desktop or laptop (no push button), each user may run the companion\n' "$step"
printf '     instead: warm MQTT link, openings by others in the widgets, gate open\n'
printf '     through its control socket:\n'
printf '       systemctl --user enable --now gate-user.service\n'
