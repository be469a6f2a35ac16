#!/bin/sh
# OpenMPI's launcher agent for tools/mpi_netns.sh (--mca plm_rsh_agent):
# called as ssh would be, `agent [options] HOST COMMAND...`, it runs COMMAND
# (an orted) in HOST's network namespace, under HOST's own host name,
# instead of logging in over ssh. HOST is an address 10.77.0.(10+i) of
# namespace $MLC_NETNS_PREFIX-h<i>.
while [ $# -gt 0 ]; do
  case "$1" in
  -*) shift ;;
  *) break ;;
  esac
done
host=$1
shift
i=$(( ${host##*.} - 10 ))
ns="${MLC_NETNS_PREFIX:-mlcnet}-h$i"
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0"; eval "$1"' "$ns" "$*"
