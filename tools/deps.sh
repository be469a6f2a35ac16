#!/bin/sh
# Install the Debian packages named on the command line that are missing:
# with apt-get when running as root, otherwise print the exact command.
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing
else
  echo "deps: missing packages; run as root:"
  echo "  apt-get install -y$missing"
  exit 1
fi
