#!/bin/bash
# lockd installed as users install it: the built .deb in a Debian 12 rootfs (debootstrap
# minbase, cached), the rootfs's own /lib/systemd/systemd booted as PID 1 in new pid, mount,
# cgroup, uts, ipc and net namespaces (ARCHITECTURE.md, testing; not systemd-nspawn), from
# cgroups of its own. Then, inside: socket activation, Type=notify, reload and a bad policy on
# reload, plugin runs in scopes on the system bus with MemoryMax= and TasksMax= enforced,
# journald entries with lockd's MESSAGE_IDs, an approval with a typed value that goes nowhere
# else (not the journal, not the state), a confined agent served and a plain one refused,
# a logind session that keys an input session and wipes it at logout, systemd-analyze security,
# and apt's purge that leaves nothing. Everything started is gone
# afterwards. TAP on stdout; a missing prerequisite is a failure.
# usage: test-installed.sh SOURCE_DIR PLUGINS_BUILD_DIR PLUGINS_SRC_DIR [SHARED_DIR]
# (SHARED_DIR: the packages built once for this suite and the package one, tests/tools/build-deb.sh)
set -u
src=$1
plugins=$2
plugins_src=$3
shared=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }
bail() { not_ok "$1"; echo "1..$n"; exit 1; }

[ "$(id -u)" = 0 ] || bail "the installed suite runs as root"
for tool in debootstrap unshare nsenter dpkg-buildpackage; do
        command -v $tool >/dev/null || bail "$tool is not installed (scripts/deps --test)"
done

# The rootfs: minbase plus what the package needs at run time and what the checks use. Cached,
# and made again when this list changes.
include=systemd,systemd-sysv,dbus,libpam-systemd,libjansson4,libyaml-0-2,libcap2,libssl3,libcurl4,passwd
cache=${LOCKD_ROOTFS_CACHE:-/var/cache/lockd-test}
rootfs=$cache/rootfs-bookworm-$(echo "$include" | sha256sum | cut -c1-12)
if [ ! -x "$rootfs/lib/systemd/systemd" ]; then
        mkdir -p "$cache"
        rm -rf "$rootfs.tmp"
        if ! debootstrap --variant=minbase --include="$include" bookworm "$rootfs.tmp" \
                http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1; then
                tail -n 20 "$cache/debootstrap.log" | sed 's/^/# /'
                bail "debootstrap could not make the rootfs (is Debian's mirror reachable?)"
        fi
        mv "$rootfs.tmp" "$rootfs"
fi
ok "a Debian 12 rootfs (debootstrap minbase, cached)"

work=$(mktemp -d)
name=lockd-installed-$$
created=()
back=() # the cgroup this shell came from, per hierarchy: where it goes before ours are removed
pid1=
cgroot=/sys/fs/cgroup
origin_of() {
        # The cgroup this shell came from in hierarchy $1, to go back to before removing ours.
        local h=$1 key
        case $h in
        unified) key="" ;;
        systemd) key="name=systemd" ;;
        *) key=$h ;;
        esac
        awk -F: -v k="$key" '$2 == k { sub(/^[^:]*:[^:]*:/, ""); print; exit }' "$work/self.cgroup"
}
cleanup() {
        local d p pids
        if [ -n "$pid1" ] && kill -0 "$pid1" 2>/dev/null; then
                kill -RTMIN+4 "$pid1" 2>/dev/null # poweroff
                for _ in $(seq 50); do kill -0 "$pid1" 2>/dev/null || break; sleep 0.1; done
        fi
        for _ in 1 2 3 4 5 6 7 8 9 10; do
                pids=$(for d in "${created[@]}"; do
                        find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
                done | grep -vx "$$" | sort -u)
                [ -z "$pids" ] && break
                for p in $pids; do kill -KILL "$p" 2>/dev/null; done
                sleep 0.1
        done
        for i in "${!created[@]}"; do
                echo $$ >"${back[$i]}/cgroup.procs" 2>/dev/null
        done
        mountpoint -q "$work/root" && { umount "$work/root" 2>/dev/null || umount -l "$work/root"; }
        for d in "${created[@]}"; do
                find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
                [ -d "$d" ] && echo "# could not remove $d"
        done
        rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cp /proc/self/cgroup "$work/self.cgroup"

# The package, built from a clean copy of this tree (or the package suite's build of the same).
if ! "$here/../tools/build-deb.sh" "$src" "$work/deb" "$shared"; then
        tail -n 30 "$work/deb/log" | sed 's/^/# /'
        bail "the package does not build"
fi
ok "the package builds"

# A throwaway root: the cached rootfs under an overlay.
mkdir -p "$work/upper" "$work/ovl" "$work/root"
mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$work/upper,workdir=$work/ovl" \
        "$work/root" || bail "cannot mount an overlay on the rootfs"
root=$work/root
cp "$work"/deb/lockd_*_amd64.deb "$root/tmp/"
# As users install a downloaded package: apt, which resolves its dependencies (the rootfs holds
# them all, so nothing is fetched).
if chroot "$root" sh -c 'apt-get install -y /tmp/lockd_*_amd64.deb' \
        >"$work/dpkg.log" 2>&1; then
        ok "apt-get install ./lockd_*.deb installs lockd into the rootfs"
else
        sed 's/^/# /' "$work/dpkg.log"
        bail "apt-get install failed"
fi
check "installing made the lockd-console group and the engine's user lockd (sysusers)" \
        "chroot '$root' getent group lockd-console >/dev/null &&
         chroot '$root' getent passwd lockd >/dev/null"

# What the checks install: test plugins, unsigned (the policy allows it here), and an agent user.
for c in good-one good-inputs scope-oom threads-cap; do
        mkdir -p "$root/root/rel/$c"
        cp "$plugins_src/$c/plugin.toml" "$root/root/rel/$c/"
        cp "$plugins/$c" "$root/root/rel/$c/plugin"
done
chroot "$root" useradd --system --no-create-home --shell /usr/sbin/nologin agent
cat >"$root/etc/lockd/lockd.yaml" <<'YAML'
agents:
  users: [agent]
allow_unsigned: true
YAML
printf 'a file only the human may read\n' >"$root/root/file.txt"
# A value only the human types: it must reach the plugin's fd 6 and nothing else. The file does
# not hold it (lockd keeps granted files' snapshots in its state), so the answer is 0.
secret=Zq7-typed-only-$$-$RANDOM
printf 'a file that holds no typed value\n' >"$root/root/secret.txt"

# Boot: from cgroups of our own (never the root one), as PID 1 of new namespaces.
if [ -e "$cgroot/cgroup.controllers" ]; then
        hier=("$cgroot$(sed -n 's/^0:://p' /proc/self/cgroup)")
else
        hier=()
        for h in systemd unified memory pids cpu cpuacct; do
                [ -d "$cgroot/$h" ] && hier+=("$cgroot/$h$(origin_of "$h")")
        done
fi
for h in "${hier[@]}"; do
        h=${h%/}
        mkdir "$h/$name" || bail "cannot create the cgroup $h/$name"
        created+=("$h/$name")
        back+=("$h")
done
for d in "${created[@]}"; do echo $$ >"$d/cgroup.procs" || bail "cannot move into $d"; done
unshare --pid --mount --cgroup --uts --ipc --net --fork "$here/boot-inner.sh" "$root" \
        >"$work/console.log" 2>&1 &
for _ in $(seq 50); do
        pid1=$(pgrep -f -n '^/lib/systemd/systemd --log-target=console$' || true)
        [ -n "$pid1" ] && break
        sleep 0.1
done
[ -n "$pid1" ] || { sed 's/^/# /' "$work/console.log"; bail "systemd did not start"; }
# Everything below runs inside: the container's namespaces and root.
inside() { nsenter -t "$pid1" -m -u -i -n -p -C -r -w "$@"; }
state=
for _ in $(seq 100); do
        state=$(inside systemctl is-system-running 2>/dev/null)
        case $state in running | degraded) break ;; esac
        sleep 0.1
done
case $state in
running) ok "systemd as PID 1 reaches running" ;;
*) inside systemctl --failed --no-legend | sed 's/^/# /'; bail "systemd is $state" ;;
esac

# tmpfiles.d at boot (a chroot's postinst has no /proc for systemd-tmpfiles): the engine's.
statedir=$(inside stat -c '%a %U' /var/lib/lockd 2>&1)
check "/var/lib/lockd is 0700 and user lockd's (tmpfiles.d): $statedir" "[ '$statedir' = '700 lockd' ]"
check "lockd.socket and lockd-console.socket listen, lockd.service waits" \
        "inside systemctl is-active --quiet lockd.socket lockd-console.socket &&
         ! inside systemctl is-active --quiet lockd.service"
check "lockd.service is not enabled: it starts on its sockets" \
        "[ \"\$(inside systemctl is-enabled lockd.service 2>/dev/null)\" != enabled ]"
inside lockctl status >/dev/null 2>&1
check "the first connection starts lockd (socket activation, Type=notify)" \
        "inside systemctl is-active --quiet lockd.service &&
         [ \"\$(inside systemctl show -P Type lockd.service)\" = notify ]"

check "systemctl reload lockd" "inside systemctl reload lockd.service"
cp "$root/etc/lockd/lockd.yaml" "$work/policy.good"
printf 'agents: [\n' >"$root/etc/lockd/lockd.yaml"
inside systemctl reload lockd.service >/dev/null 2>&1
sleep 0.5
check "a policy that does not load on reload leaves lockd running on the old one" \
        "inside systemctl is-active --quiet lockd.service && inside lockctl status >/dev/null 2>&1"
cp "$work/policy.good" "$root/etc/lockd/lockd.yaml"
inside systemctl reload lockd.service

for c in good-one good-inputs scope-oom threads-cap; do
        inside lockctl plugin install "/root/rel/$c" >"$work/install.log" 2>&1 ||
                sed 's/^/# /' "$work/install.log"
done
# An operator's own marketplace: the installed lockd-sign makes an instance and signs a release,
# and lockd installs it through that marketplace alone.
issuer=https://ci.example.org
ref=refs/tags/test.good-zero/v1.0.0
mkdir -p "$root/root/signed"
cp "$plugins_src/good-zero/plugin.toml" "$plugins/good-zero" "$root/root/signed/"
mv "$root/root/signed/good-zero" "$root/root/signed/plugin"
check "lockd-sign signs a release that lockd installs from a marketplace of the operator's own" \
        "inside lockd-sign init /root/signer >/dev/null 2>&1 &&
         inside lockd-sign sign /root/signer \
                --identity 'https://git.example.org/acme/plugins/.ci/release.yml@$ref' \
                --issuer $issuer --ref $ref /root/signed/plugin.toml /root/signed/plugin \
                >'$work/sign.log' 2>&1 &&
         inside lockctl marketplace add in-house --trusted-root /root/signer/trusted_root.json \
                --issuer $issuer \
                --identity '^https://git\\.example\\.org/acme/plugins/\\.ci/release\\.yml@refs/tags/.*' \
                >>'$work/sign.log' 2>&1 &&
         inside lockctl plugin install /root/signed --marketplace in-house >/dev/null &&
         inside lockctl plugin list | grep -q test.good-zero" || sed 's/^/# /' "$work/sign.log"
run=$(inside lockctl plugin run test.good-one /root/file.txt 2>&1)
check "a plugin runs in a scope on the system manager: 1" "printf '%s' \"\$run\" | head -n 1 | grep -qx 1"
# Two processes: the main one root with the four spawning capabilities, its child the engine.
lp=$(inside systemctl show -P MainPID lockd.service)
ep=$(inside cat "/proc/$lp/task/$lp/children" 2>/dev/null | awk '{print $1}')
main_status=$(inside grep -E '^(Uid|CapEff):' "/proc/$lp/status" | tr -s '\t ' ' ')
engine_status=$(inside grep -E '^(Uid|CapEff|CapPrm|NoNewPrivs|Seccomp):' "/proc/$ep/status" |
        tr -s '\t ' ' ')
lockd_uid=$(chroot "$root" id -u lockd)
check "the spawner is root with CapEff 1e0; the engine user lockd, no capability, no_new_privs" \
        "printf '%s' \"\$main_status\" | grep -qx 'Uid: 0 0 0 0' &&
         printf '%s' \"\$main_status\" | grep -qx 'CapEff: 00000000000001e0' &&
         printf '%s' \"\$engine_status\" | grep -qx 'Uid: $lockd_uid $lockd_uid $lockd_uid $lockd_uid' &&
         printf '%s' \"\$engine_status\" | grep -qx 'CapEff: 0000000000000000' &&
         printf '%s' \"\$engine_status\" | grep -qx 'CapPrm: 0000000000000000' &&
         printf '%s' \"\$engine_status\" | grep -qx 'NoNewPrivs: 1'"
[ -n "$ep" ] || echo "# no engine under MainPID $lp"
if [ -n "${LOCKD_INSTALLED_DEBUG:-}" ]; then
        lp=$(inside systemctl show -P MainPID lockd.service)
        inside sh -c "ls -ld /sys/fs/cgroup/*/lockd.slice/lockd-plugins.slice; grep cgroup /proc/$lp/mountinfo | grep -v ' / /sys/fs/cgroup '; cat /proc/$lp/cgroup" | sed 's/^/# dbg /'
        inside journalctl -b -u lockd --no-pager | tail -n 15 | sed 's/^/# dbg /'
fi
run=$(inside lockctl plugin run test.scope-oom /root/file.txt 2>&1)
check "MemoryMax= of the run's scope kills a plugin over it (cause oom)" \
        "printf '%s' \"\$run\" | grep -q 'oom'"
run=$(inside lockctl plugin run test.threads-cap /root/file.txt 2>&1)
check "a plugin starting threads past TasksMax= is refused" \
        "printf '%s' \"\$run\" | head -n 1 | grep -qx 1"
printf '%s\n' "$run" | sed 's/^/# /'

check "journald holds lockd's records with its MESSAGE_IDs" \
        "inside journalctl -b -o export MESSAGE_ID=f0be636c08d345d09720c92f01affeb1 |
         grep -qx 'MESSAGE_ID=f0be636c08d345d09720c92f01affeb1'"

# An agent: served when started confined by lockctl agent run, refused as a plain process.
check "an agent started with lockctl agent run is served" \
        "inside lockctl agent run --user agent -- /usr/bin/lockask files >/dev/null 2>&1"
check "a plain agent process is refused" \
        "! inside runuser -u agent -- /usr/bin/lockask files >/dev/null 2>&1 &&
         inside journalctl -b -o export MESSAGE_ID=21e60ef19e8c4e0cba518c9b8f0cedb0 | grep -q MESSAGE_ID"

# The whole question flow with a typed value: grant, an agent's plan with ${word}, the human's
# approval typing the value at a terminal (script(1) gives lockctl one), the answer; then the
# value is nowhere in the journal or lockd's state.
handle=$(inside lockctl grant /root/secret.txt --agent agent --json 2>/dev/null |
        sed -n 's/.*"handle": "\([^"]*\)".*/\1/p')
ticket=$(inside lockctl agent run --user agent -- /usr/bin/lockask ask "$handle" test.good-inputs \
        --input 'needle=${word}' --no-wait 2>/dev/null)
# approve_typing COMMAND LOG VALUE: COMMAND (an approval) at a terminal inside, VALUE typed at
# its prompt. The value goes in once lockctl prompts with echo off: typed before, the terminal
# would echo it and lockctl would flush it. An approver that ended early must fail a check
# afterwards, not this script (SIGPIPE).
approve_typing() {
        rm -f "$work/tty-in"
        mkfifo "$work/tty-in"
        timeout 60 nsenter -t "$pid1" -m -u -i -n -p -C -r -w \
                script -qec "$1" /dev/null <"$work/tty-in" >"$2" 2>&1 &
        local approver=$!
        exec 9>"$work/tty-in"
        for _ in $(seq 100); do
                grep -q 'value for' "$2" 2>/dev/null && break
                sleep 0.1
        done
        trap '' PIPE
        printf '%s\n' "$3" >&9 2>/dev/null
        trap - PIPE
        exec 9>&-
        wait "$approver"
}
approve_typing "lockctl approve $ticket --yes" "$work/approve.log" "$secret"
answer=$(inside lockctl agent run --user agent -- /usr/bin/lockask wait "$ticket" --timeout 30s \
        2>"$work/wait.log")
check "an approval with a typed value answers the agent's question: $answer" "[ '$answer' = 0 ]"
[ "$answer" = 0 ] || { echo "handle $handle ticket $ticket"; cat "$work/approve.log" "$work/wait.log"; } |
        sed 's/^/# /'
check "the typed value is nowhere in journalctl -o export or lockd's state" \
        "! inside journalctl -b -o export | grep -aq '$secret' &&
         ! inside grep -raq '$secret' /var/lib/lockd /run/lockd"

# A real logind session keys the input session: the human logs in (runuser -l: PAM, with
# pam_systemd), approves typing a value there, and logs out; lockd's session is logind's
# ("logind:N" in the audit), and the logout wipes it (session_end, reason logout).
sess=$(inside runuser -l root -c 'echo "$XDG_SESSION_ID"' 2>&1)
check "runuser -l opens a logind session (pam_systemd): '$sess'" "[ -n '$sess' ]"
[ -n "$sess" ] || { inside systemctl status systemd-logind dbus 2>&1 | sed 's/^/# /';
        inside journalctl -b --no-pager | grep -i -E 'pam|logind' | tail -n 20 | sed 's/^/# /'; }
ticket=$(inside lockctl agent run --user agent -- /usr/bin/lockask ask "$handle" test.good-inputs \
        --input 'needle=${word}' --no-wait 2>/dev/null)
approve_typing "runuser -l root -c 'lockctl approve $ticket --yes'" "$work/approve2.log" \
        "$secret-2"
audit=/var/lib/lockd/audit/audit.jsonl
started=$(inside grep '"session_start"' "$audit" | grep -o '"session": *"logind:[^"]*"' | tail -n 1)
check "an approval in a logind session keys the input session by it: $started" \
        "[ -n '$started' ]"
[ -n "$started" ] || { sed 's/^/# /' "$work/approve2.log"; inside ls /var/lib/lockd | sed 's/^/# /';
        inside tail -n 4 "$audit" | cut -c1-400 | sed 's/^/# /'; }
sid=${started##*logind:}
sid=${sid%\"}
# The record's keys are sorted: each is matched on its own.
ended() {
        inside grep '"session_end"' "$audit" | grep "\"session\":\"logind:$sid\"" |
                grep -q '"reason":"logout"'
}
for _ in $(seq 100); do
        ended && break
        sleep 0.1
done
check "the logout ends logind session $sid and lockd wipes its input session (reason logout)" ended
if ! ended; then
        lp=$(inside systemctl show -P MainPID lockd.service)
        ep=$(inside cat "/proc/$lp/task/$lp/children" 2>/dev/null | awk '{print $1}')
        inside ls -l "/proc/$ep/fd" | grep -c inotify | sed 's/^/# engine inotify fds: /'
        inside ls -la /run/systemd/sessions | sed 's/^/# /'
        inside tail -n 3 "$audit" | cut -c1-300 | sed 's/^/# /'
        inside journalctl -b -u lockd --no-pager | tail -n 8 | sed 's/^/# /'
fi

exposure=$(inside systemd-analyze security lockd.service 2>/dev/null |
        sed -n 's/.*Overall exposure level for lockd.service: \([0-9.]*\).*/\1/p')
check "systemd-analyze security lockd.service: $exposure (at most 1.3)" \
        "[ -n '$exposure' ] && awk 'BEGIN { exit !($exposure <= 1.3) }'"

inside systemctl stop lockd.service lockd.socket lockd-console.socket
inside apt-get purge -y lockd >"$work/purge.log" 2>&1 || sed 's/^/# /' "$work/purge.log"
left=$(inside sh -c 'ls /lib/systemd/system/lockd* /etc/lockd /var/lib/lockd /run/lockd \
        /run/lockd.sock /etc/systemd/system/sockets.target.wants/lockd* 2>/dev/null;
        getent group lockd-console; getent passwd lockd; systemctl list-units --all --no-legend "lockd*"')
check "apt-get purge lockd leaves no unit, user, group, socket or state" "[ -z \"\$left\" ]"
[ -z "$left" ] || printf '%s\n' "$left" | sed 's/^/# /'

echo "1..$n"
[ "$failed" = 0 ]
