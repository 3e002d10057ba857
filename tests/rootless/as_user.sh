#!/bin/sh
# as_user.sh [--range] CMD [ARGS...]: runs CMD as the ordinary user
# sentry-rl-single (made if missing: a system user, no subordinate range,
# as rootless_test makes it), or with --range as sentry-rl-subid (made if
# missing, with a subordinate range in /etc/subuid and /etc/subgid, as
# rootless_test makes it), with a clean environment (PATH, HOME, LANG, and
# the SENTRY_* variables of the caller); as any other user, runs CMD as that
# user. For the ctest entries that repeat a suite without root
# (tests/rootless/CMakeLists.txt).
set -eu
range=
if [ "${1:-}" = --range ]; then range=1; shift; fi
if [ "$(id -u)" != 0 ]; then exec "$@"; fi
if [ -n "$range" ]; then
  name=sentry-rl-subid
  getent passwd "$name" >/dev/null || /usr/sbin/useradd -m -s /bin/sh "$name"
  grep -q "^$name:" /etc/subuid ||
    /usr/sbin/usermod --add-subuids 300000-365535 --add-subgids 300000-365535 "$name"
else
  name=sentry-rl-single
  getent passwd "$name" >/dev/null || /usr/sbin/useradd -r -m -s /bin/sh "$name"
fi
home=$(getent passwd "$name" | cut -d: -f6)
[ -d "$home" ] || { mkdir -p "$home"; chown "$name:" "$home"; }
set -- /usr/bin/env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 \
  $(env | grep -E '^(SENTRY_[A-Z_]*|GTEST_[A-Z_]*)=' || true) "$@"
exec /usr/sbin/runuser -u "$name" -- "$@"
