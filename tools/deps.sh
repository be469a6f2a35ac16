#!/bin/sh
# Install the Debian packages named on the command line that are missing:
# with apt-get when running as root, otherwise print the exact command.
# Packages after --optional are installed the same way when root, but their
# absence never fails the build (tests that need them say SKIP).
missing=""
optional=""
mode=required
for p in "$@"; do
  if [ "$p" = --optional ]; then
    mode=optional
    continue
  fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
  if [ $mode = required ]; then missing="$missing $p"; else optional="$optional $p"; fi
done
[ -z "$missing$optional" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing$missing$optional"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || [ -z "$missing" ] || exit 1
  if [ -n "$missing" ]; then
    apt-get install -y -qq --no-install-recommends $missing || exit 1
  fi
  if [ -n "$optional" ]; then
    apt-get install -y -qq --no-install-recommends $optional ||
      echo "deps: optional packages not installed (some checks will SKIP):$optional"
  fi
elif [ -n "$missing" ]; then
  echo "deps: missing packages; run as root:"
  echo "  apt-get install -y$missing$optional"
  exit 1
else
  echo "deps: optional packages missing (some checks will SKIP):$optional"
fi
