#!/bin/bash
# PID 1 of a new pid namespace (test-installed.sh starts it through unshare) until it execs the
# rootfs's own systemd as PID 1: mounts what a booting container needs inside ROOT — proc with
# /proc/sys read-only, sysfs read-only, the cgroup hierarchies as this cgroup namespace shows
# them (its root is the test's own cgroup), /dev, and fresh tmpfs on /run and /tmp.
# usage: boot-inner.sh ROOT
set -eu
r=$1
mount --make-rprivate /
mount --bind "$r" "$r"
mount -t proc proc "$r/proc"
mount --bind "$r/proc/sys" "$r/proc/sys"
mount -o remount,ro,bind "$r/proc/sys"
mount -t sysfs -o ro sysfs "$r/sys"
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
        mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
else
        mount -t tmpfs -o mode=0755 tmpfs "$r/sys/fs/cgroup"
        # The hierarchies systemd 252 uses on a hybrid host; not cpuset (new cgroups refuse tasks).
        for h in systemd unified memory pids cpu cpuacct; do
                [ -d "/sys/fs/cgroup/$h" ] || continue
                mkdir -p "$r/sys/fs/cgroup/$h"
                case $h in
                systemd) mount -t cgroup -o none,name=systemd cgroup "$r/sys/fs/cgroup/$h" ;;
                unified) mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup/$h" ;;
                *) mount -t cgroup -o "$h" cgroup "$r/sys/fs/cgroup/$h" ;;
                esac
        done
fi
mount --rbind /dev "$r/dev"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$r/run"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/tmp"
export container=lockd-test
exec chroot "$r" /lib/systemd/systemd --log-target=console
