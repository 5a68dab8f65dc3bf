# Shared by the scripts in scripts/: package installation and temporary folders.

# Installs Debian packages that are missing, with apt-get (sudo only when not root).
ensure_packages() {
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "installing: ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Starts esp32-sim in the background on a free loopback port.
# Sets SIM_PID and SIM_PORT; the simulator's output goes to files in $1.
# Remaining arguments go to esp32-sim.
start_simulator() {
    local dir="$1" binary="$2"
    shift 2
    "$binary" --udp 127.0.0.1:0 "$@" >"$dir/sim.out" 2>"$dir/sim.err" &
    SIM_PID=$!
    local waited=0
    until grep -qx ready "$dir/sim.out" 2>/dev/null; do
        if ! kill -0 "$SIM_PID" 2>/dev/null || [ $waited -ge 100 ]; then
            echo "esp32-sim did not start:" >&2
            cat "$dir/sim.err" >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    SIM_PORT=$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/sim.err" | head -n 1)
    [ -n "$SIM_PORT" ] || { echo "esp32-sim did not say its port" >&2; return 1; }
}
