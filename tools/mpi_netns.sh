#!/bin/sh
# Ranks on separate "hosts" on one machine (docs/MPI.md):
# network namespaces (three, or MLC_NETNS_HOSTS), each a host with its own
# address and host name, joined by veth pairs to a bridge in one more
# ("switch") namespace. mpirun runs in host 0 (rank 0: search and
# database), one rank per host; OpenMPI's launcher starts its daemons on
# the other hosts through tools/mpi_netns_rsh.sh, which enters
# the host's namespace instead of ssh; every MPI byte goes over TCP between
# the namespaces (btl tcp,self: no shared memory).
#
#   sudo tools/mpi_netns.sh [mlc-tune options]    up, tune, down
#   sudo tools/mpi_netns.sh up | down              the network alone
#
# Default tuning: matmul 64,64,64, 32 trials into /tmp/mlc_netns.db.
# MLC_MPIRUN_ARGS: more mpirun options (e.g. --enable-recovery).
# Needs root (ip netns, unshare --uts), iproute2 and OpenMPI.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
B=${MLC_BUILD:-build}
case "$B" in /*) ;; *) B=$top/$B ;; esac
P=${MLC_NETNS_PREFIX:-mlcnet}
NET=10.77.0
N=${MLC_NETNS_HOSTS:-3}
case "$N" in [2-9] | [1-5][0-9]) ;; *) echo "mpi_netns.sh: MLC_NETNS_HOSTS wants 2..59" >&2; exit 2 ;; esac

up() {
  ip netns add "$P-sw"
  ip netns exec "$P-sw" ip link add br0 type bridge
  ip netns exec "$P-sw" ip link set br0 up
  i=0
  while [ $i -lt $N ]; do
    ip netns add "$P-h$i"
    ip link add "$P-h$i" type veth peer name "$P-s$i"
    ip link set "$P-h$i" netns "$P-h$i"
    ip link set "$P-s$i" netns "$P-sw"
    ip netns exec "$P-sw" ip link set "$P-s$i" master br0 up
    ip netns exec "$P-h$i" ip link set "$P-h$i" name eth0
    ip netns exec "$P-h$i" ip addr add "$NET.$((10 + i))/24" dev eth0
    ip netns exec "$P-h$i" ip link set eth0 up
    ip netns exec "$P-h$i" ip link set lo up
    i=$((i + 1))
  done
}

down() {
  i=0
  while [ $i -lt $N ]; do
    ip netns del "$P-h$i" 2>/dev/null || true
    i=$((i + 1))
  done
  ip netns del "$P-sw" 2>/dev/null || true
}

case "$1" in
up) up; exit 0 ;;
down) down; exit 0 ;;
esac

[ "$(id -u)" = 0 ] || { echo "mpi_netns.sh: needs root (ip netns)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "mpi_netns.sh: mpirun is missing (apt-get install openmpi-bin)" >&2; exit 1; }
down
trap down EXIT
up
echo "# hosts: $P-h0 $NET.10 (rank 0) to $P-h$((N - 1)) $NET.$((9 + N)); bridge in $P-sw" >&2
hosts=$(mktemp)
i=0
while [ $i -lt $N ]; do
  echo "$NET.$((10 + i)) slots=1" >>"$hosts"
  i=$((i + 1))
done
[ $# -gt 0 ] || set -- --task matmul --shape 64,64,64 --trials 32 --db /tmp/mlc_netns.db -v
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MLC_NETNS_PREFIX=$P MLC_NETNS_NET=$NET
# rank 0's host: its own namespace and host name; the others get theirs
# from mpi_netns_rsh.sh
set +e
ip netns exec "$P-h0" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$P-h0" \
  mpirun --hostfile "$hosts" -n $N --bind-to none ${MLC_MPIRUN_ARGS:-} \
  --mca plm_rsh_agent "$top/tools/mpi_netns_rsh.sh" \
  --mca btl tcp,self --mca btl_tcp_if_include $NET.0/24 --mca oob_tcp_if_include $NET.0/24 \
  "$B/bin/mlc-tune" "$@"
rc=$?
rm -f "$hosts"
exit $rc
