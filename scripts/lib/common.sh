# Shared by the scripts in scripts/: package installation and temporary folders.

# What `swift build` needs beyond Swift: the C headers behind the system-library
# targets (Sources/CMosquitto: mosquitto.h, Sources/CGPIOD: gpiod.h of libgpiod 1.6,
# Sources/CSDBus: systemd/sd-bus.h); the libraries come with them. Every script that builds installs these.
BUILD_PACKAGES=(libmosquitto-dev libgpiod-dev libsystemd-dev)

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

# Starts esp32-sim in the background on a free loopback port: the machine's, or
# that of the network namespace named by SIM_NETNS when it is set.
# Sets SIM_PID and SIM_PORT; the simulator's output goes to files in $1.
# Remaining arguments go to esp32-sim.
start_simulator() {
    local dir="$1" binary="$2" inside=()
    shift 2
    [ -z "${SIM_NETNS:-}" ] || inside=(ip netns exec "$SIM_NETNS")
    "${inside[@]}" "$binary" --udp 127.0.0.1:0 "$@" >"$dir/sim.out" 2>"$dir/sim.err" &
    SIM_PID=$!
    wait_for_start esp32-sim "$SIM_PID" "$dir/sim.err" 100 grep -sqx ready "$dir/sim.out" || return 1
    SIM_PORT=$(sed -n 's/.*listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/sim.err" | head -n 1)
    [ -n "$SIM_PORT" ] || { echo "esp32-sim did not say its port" >&2; return 1; }
}

# Starts an anonymous mosquitto broker in the background on a free loopback port.
# Sets BROKER_PID and BROKER_PORT; its config and log go to files in $1; further
# arguments are more lines of its configuration.
start_broker() {
    local dir="$1"
    shift
    BROKER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n' "$BROKER_PORT" >"$dir/mosquitto.conf"
    [ $# -eq 0 ] || printf '%s\n' "$@" >>"$dir/mosquitto.conf"
    mosquitto -c "$dir/mosquitto.conf" >"$dir/mosquitto.log" 2>&1 &
    BROKER_PID=$!
    wait_for_start mosquitto "$BROKER_PID" "$dir/mosquitto.log" 50 loopback_port_open "$BROKER_PORT"
}

loopback_port_open() {
    (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null
}

# wait_for_start NAME PID LOG TENTHS COMMAND...: runs COMMAND every 0.1 s until it
# succeeds; fails, showing LOG, when PID has ended or after TENTHS tries.
wait_for_start() {
    local name=$1 pid=$2 log=$3 tenths=$4 waited=0
    shift 4
    until "$@"; do
        if ! kill -0 "$pid" 2>/dev/null || [ "$waited" -ge "$tenths" ]; then
            echo "$name did not start:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

# Sets RELEASE_BUILD to the `swift build` command line of the binaries that ship:
# the .deb (scripts/package-deb) is built with it, and the benchmarks and the
# soak measure what it builds. $1 is the scratch path.
#   --static-swift-stdlib      the Swift runtime libraries linked in: loading them
#                              dynamically costs about 3.5 ms per start.
#   libstdc++ linked in        (GCC Runtime Library Exception) the Swift runtime's
#                              only C++ library; loaded dynamically it costs 1.5 ms
#                              per start (its own relocations) and 1.1 MB of
#                              resident memory in the daemon.
#   --disable-local-rpath      no RUNPATH $ORIGIN: gate needs no library of its own
#                              folder, and with it the loader probed a dozen
#                              glibc-hwcaps/tls subfolders of /usr/bin for each of
#                              libm, libgcc_s, libc and libmosquitto (0.1 ms a start).
#   lld -z pack-relative-relocs  DT_RELR (glibc >= 2.36): the executable's 45,000
#                              relative relocations in 8 KB instead of a 1 MB table
#                              that the loader reads, and keeps resident, at start.
#   -z now                     with the default relro: full RELRO, as Debian's
#                              hardening flags give C programs. Swift already builds
#                              position-independent executables.
#   --no-export-dynamic        undoes the Swift driver's -export-dynamic: nothing
#                              looks gate's own symbols up by name (the runtime's
#                              dlsym calls are for libdispatch and sanitizers), and
#                              the 600 KB of exported names were read at every
#                              dlopen (libmosquitto, libssl, libcrypto resolve each
#                              symbol in the executable first) and kept resident.
# The linker finds libstdc++.a through a one-line linker script named
# libstdc++.so in a folder searched before the compiler's own.
set_release_build() {
    local scratch=$1
    local archive
    archive=$(gcc -print-file-name=libstdc++.a)
    [[ $archive == /* && -f $archive ]] || { echo "no static libstdc++ (libstdc++-12-dev): gcc says '$archive'" >&2; return 1; }
    mkdir -p "$scratch/static-libstdc++"
    printf 'INPUT(%s)\n' "$archive" >"$scratch/static-libstdc++/libstdc++.so"
    RELEASE_BUILD=(swift build -c release --static-swift-stdlib --disable-local-rpath --scratch-path "$scratch"
        -Xswiftc -use-ld=lld -Xswiftc -Xclang-linker -Xswiftc "-L$(cd "$scratch" && pwd)/static-libstdc++"
        -Xlinker -z -Xlinker pack-relative-relocs -Xlinker -z -Xlinker now -Xlinker --no-export-dynamic)
}
