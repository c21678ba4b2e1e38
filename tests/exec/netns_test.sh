#!/usr/bin/env bash
# ctest driver: `ppsim execute --hostfile` across hosts for real. Network namespaces on this
# machine are the hosts: each has its own interface, address and host name, joined by a bridge in
# a namespace of its own (the machine's own network is not touched). Open MPI reaches them with
# its rsh launcher, whose agent enters the namespace instead of ssh; the ranks talk TCP.
#
#   tests/exec/netns_test.sh build/dev/ppsim
#
# 1. zb-h1 on 2 ranks and zb-v on 4, over 2 hosts: exit 0, the gradients equal the reference,
#    the ranks ran on both hosts, and the measured trace holds one event per task.
# 2. `mpirun -np 4 ppsim sweep` over the 2 hosts writes the bytes one process writes.
# 3. One host is killed mid-run (every process in its namespace): exit 6, its rank named.
# Exit 77 (ctest SKIP_RETURN_CODE) where namespaces cannot be made: not root, no `ip`, ...
set -uo pipefail

ppsim=$1
skip() { echo "netns_test: SKIP: $*"; exit 77; }
fail() { echo "netns_test: FAIL: $*" >&2; exit 1; }
[ -x "$ppsim" ] || fail "no ppsim executable at '$ppsim'"
ppsim=$(cd "$(dirname "$ppsim")" && pwd)/$(basename "$ppsim")
[ "$(id -u)" -eq 0 ] || skip "needs root to make network namespaces"
command -v ip >/dev/null || skip "no ip command (install iproute2: make deps)"
command -v unshare >/dev/null || skip "no unshare command (util-linux)"
command -v mpirun >/dev/null || skip "no mpirun (install openmpi-bin: make deps)"

id=$$
sw=ppsim-$id-sw
hosts_ns=(ppsim-$id-h1 ppsim-$id-h2)
work=$(mktemp -d)
cleanup() {
  local ns
  for ns in "${hosts_ns[@]}" "$sw"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$sw" 2>"$work/err" || skip "cannot make a network namespace: $(cat "$work/err")"

# The switch: a bridge in its own namespace, with the launcher's address.
ip -n "$sw" link set lo up
ip -n "$sw" link add br0 type bridge
ip -n "$sw" addr add 10.77.0.254/24 dev br0
ip -n "$sw" link set br0 up
: >"$work/map"
: >"$work/hostfile"
k=0
for ns in "${hosts_ns[@]}"; do
  k=$((k + 1))
  ip netns add "$ns" || fail "cannot make namespace $ns"
  # Both ends are made inside the namespaces: the machine's own interfaces are not touched.
  ip link add "port$k" netns "$sw" type veth peer name eth0 netns "$ns" || fail "veth for $ns"
  ip -n "$sw" link set "port$k" master br0
  ip -n "$sw" link set "port$k" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "10.77.0.$k/24" dev eth0
  ip -n "$ns" link set eth0 up
  echo "10.77.0.$k $ns" >>"$work/map"
done

# Open MPI's rsh agent, called as `agent HOST COMMAND...` like ssh: it runs the command in the
# host's network namespace and a UTS namespace named after it, through a shell as sshd would. Like
# an ssh client, the agent itself stays on the launching host (it waits, not execs), so killing
# a host's processes does not kill it; and like an ssh client, which hears of the remote's death
# only through the network, it ends a moment after its command does. mpirun then hears of the
# loss first from its daemon's connection, whose report names the host. (Told first by the agent,
# mpirun says only that a daemon failed to start; ppsim then says a host was lost after every
# rank had started, and where they ran: tests/exec/launcher_test.cpp.)
cat >"$work/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
ns=\$(sed -n "s/^\$host //p" "$work/map")
[ -n "\$ns" ] || { echo "agent: unknown host \$host" >&2; exit 255; }
ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
rc=\$?
[ \$rc -eq 0 ] || sleep 1
exit \$rc
AGENT
chmod +x "$work/agent.sh"
mpi_env=(OMPI_MCA_plm_rsh_agent="$work/agent.sh" OMPI_MCA_btl=self,tcp
  OMPI_MCA_btl_tcp_if_include=10.77.0.0/24 OMPI_MCA_oob_tcp_if_include=10.77.0.0/24)
# ppsim runs in the switch's namespace, so every rank is on a "remote" host.
launch() { ip netns exec "$sw" env "${mpi_env[@]}" "$ppsim" "$@"; }

small=(--dim 24 --tokens 8 --blocks 2 --iterations 2 --costs F=1,B=1,W=1 --watchdog 30)
run_ok() {
  local schedule=$1 np=$2 slots=$3
  local m=$((2 * np))
  : >"$work/hostfile"
  for k in 1 2; do echo "10.77.0.$k slots=$slots" >>"$work/hostfile"; done
  launch execute -s "$schedule" -p "$np" -m "$m" "${small[@]}" --hostfile "$work/hostfile" \
    --trace "$work/measured.json" --json >"$work/out.json" 2>"$work/err.txt"
  local rc=$?
  [ $rc -eq 0 ] || { cat "$work/err.txt" >&2; fail "$schedule -np $np over 2 hosts: exit $rc"; }
  grep -q '"passed": true' "$work/out.json" || fail "$schedule: the gradient check did not pass"
  for ns in "${hosts_ns[@]}"; do
    grep -q "\"host\": \"$ns\"" "$work/out.json" || fail "$schedule: no rank ran on $ns"
  done
  "$ppsim" simulate -s "$schedule" -p "$np" -m "$m" --trace "$work/simulated.json" >/dev/null ||
    fail "ppsim simulate failed"
  local want got tasks
  # Task slices only (the compute track, tid 0; messages are slices on the comm tracks).
  tasks='"ph":"X","ts":[0-9.]*,"dur":[0-9.]*,"pid":[0-9]*,"tid":0'
  want=$(grep -o "$tasks" "$work/simulated.json" | wc -l)
  got=$(grep -o "$tasks" "$work/measured.json" | wc -l)
  [ "$want" -gt 0 ] && [ "$got" -eq "$want" ] ||
    fail "$schedule: $got measured task events, expected $want"
  echo "netns_test: $schedule -np $np over ${hosts_ns[*]} (TCP): gradients equal the reference, $got task events"
}
run_ok zb-h1 2 1
run_ok zb-v 4 2

# A sweep's points shared among 4 ranks on the 2 hosts: rank 0 gathers them over TCP and writes
# what one process writes (ppsim/run/sweep.hpp's PointExchange).
: >"$work/hostfile"
for k in 1 2; do echo "10.77.0.$k slots=2" >>"$work/hostfile"; done
grid=(sweep -s 1f1b,zb-h2,zb-auto,interleaved-1f1b -p 2,4 -m 2,4,8,9 --mem-limit 0.5p,3p --json)
"$ppsim" "${grid[@]}" --threads 1 >"$work/one.json" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "sweep in one process failed"; }
ip netns exec "$sw" env "${mpi_env[@]}" timeout 90 mpirun --allow-run-as-root -np 4 \
  --hostfile "$work/hostfile" "$ppsim" "${grid[@]}" >"$work/ranks.json" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "mpirun -np 4 ppsim sweep over 2 hosts failed"; }
cmp -s "$work/one.json" "$work/ranks.json" || fail "the sweep over 2 hosts differs from one process"
echo "netns_test: mpirun -np 4 ppsim sweep over ${hosts_ns[*]} (TCP): byte-identical to one process"

# A host dies mid-run: every process in its namespace is killed.
: >"$work/hostfile"
for k in 1 2; do echo "10.77.0.$k slots=1" >>"$work/hostfile"; done
launch execute -s 1f1b -p 2 -m 8 --dim 128 --tokens 128 --blocks 2 --iterations 1000 \
  --costs F=1 --watchdog 30 --hostfile "$work/hostfile" >"$work/out.txt" 2>"$work/err.txt" &
run=$!
victim=${hosts_ns[1]}
# Mid-run means the ranks talk: a TCP connection from the victim to the other host (the ranks'
# btl). Seeing the rank's process is not enough: killed while Open MPI's daemons still report
# their start, mpirun says only that a daemon failed to start, naming no rank.
started=0
for _ in $(seq 1 300); do
  ip netns exec "$victim" ss -Htn state established dst 10.77.0.1 2>/dev/null | grep -q . &&
    started=1 && break
  sleep 0.1
done
[ $started -eq 1 ] || { kill "$run"; cat "$work/err.txt" >&2; fail "the ranks on $victim did not start talking"; }
sleep 0.5
ip netns pids "$victim" | xargs -r kill -KILL
start=$(date +%s)
wait "$run"
rc=$?
took=$(($(date +%s) - start))
[ $rc -eq 6 ] || { cat "$work/err.txt" >&2; fail "killing $victim: exit $rc, expected 6"; }
# mpirun may also name the surviving rank it stopped (its "process rank 0" line): the victim's
# rank must be among those named, with its host.
grep -q "a rank failed: .*lost: \(rank 0 ([^)]*), \)\?rank 1 (host $victim" "$work/err.txt" ||
  { cat "$work/err.txt" >&2; fail "the lost rank is not named"; }
echo "netns_test: $victim killed mid-run: exit 6 after ${took} s, $(grep -o "rank 1 (host [^)]*)" "$work/err.txt" | head -n 1)"
