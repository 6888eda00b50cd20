#!/usr/bin/env bash
# A one-node Slurm of the tests' own, in a directory of theirs: munged (as user
# munge, its own key, socket and pid file), slurmctld and slurmd in the
# foreground, a plugstack.conf loading fabtrace_spank.so. Nothing outside DIR
# is touched: every daemon is told its files, every client gets SLURM_CONF.
#   cluster.sh up DIR PLUGIN 'PLUGIN ARGS'   starts it; prints why when it cannot
#   cluster.sh down DIR                      stops it (idempotent)
# After `up`: DIR/env holds SLURM_CONF for the clients.
set -euo pipefail
cmd=$1 dir=$2

stop_pidfile() {  # the daemon's pid, then waits (bounded) until it is gone
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

if [ "$cmd" = down ]; then
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/munged.pid"
  exit 0
fi

plugin=$3 plugin_args=${4:-}
for p in munged slurmctld slurmd srun; do
  command -v "$p" >/dev/null || { echo "cluster.sh: $p not found (scripts/install-deps: slurm-wlm munge)"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "cluster.sh: slurmd must run as root (it starts the tasks as their users)"; exit 1; }
id munge >/dev/null 2>&1 || { echo "cluster.sh: no user munge (the munge package creates it)"; exit 1; }

mkdir -p "$dir"/{munge,state,spool,log}
chmod 0755 "$dir"
chown munge:munge "$dir/munge"
chmod 0755 "$dir/munge"  # munged wants its socket reachable by every user
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$dir/munge/munge.key"
chmod 0400 "$dir/munge/munge.key"
sock=$dir/munge/munge.socket
setpriv --reuid=munge --regid=munge --init-groups munged --socket="$sock" \
  --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
  || { echo "cluster.sh: munged did not start: $(tail -n 3 "$dir/munge/munged.log" 2>/dev/null)"; exit 1; }

host=$(hostname -s)
read -r cpus < <(nproc)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port) slurmd_port=$(free_port)
cat >"$dir/slurm.conf" <<EOF
ClusterName=fabtrace-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
PlugStackConfig=$dir/plugstack.conf
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
echo "required $plugin $plugin_args" >"$dir/plugstack.conf"
echo "SLURM_CONF=$dir/slurm.conf" >"$dir/env"
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -c -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
echo $! >"$dir/slurmctld.pid"
slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
echo $! >"$dir/slurmd.pid"
# Up when the node is idle.
for _ in $(seq 300); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -q '^idle'; then exit 0; fi
  for d in slurmctld slurmd; do
    if ! kill -0 "$(cat "$dir/$d.pid")" 2>/dev/null; then
      echo "cluster.sh: $d exited: $(tail -n 5 "$dir/log/$d.out" "$dir/log/$d.log" 2>/dev/null | tr '\n' ' ')"
      exit 1
    fi
  done
  sleep 0.1
done
echo "cluster.sh: the node is not idle after 30 s: $(sinfo -N 2>&1 | tr '\n' ' ') $(tail -n 5 "$dir/log/slurmd.log" | tr '\n' ' ')"
exit 1
