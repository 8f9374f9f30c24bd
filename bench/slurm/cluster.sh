#!/usr/bin/env bash
# An emulated Slurm cluster on this machine: one slurmctld and one slurmd per emulated node,
# all on 127.0.0.1 with their own ports (NodeName=... NodeHostname=localhost Port=..., and
# `slurmd -N <name>`), select/cons_tres and sched/backfill, a private MUNGE daemon and a
# private state directory.
#
#   bench/slurm/cluster.sh start DIR NODES [GPUS_PER_NODE]   # returns once every node is idle
#   bench/slurm/cluster.sh stop DIR                          # stops every daemon it started
#   export SLURM_CONF=DIR/slurm.conf                         # for sbatch, squeue, scontrol
#
# Every daemon runs inside one private PID namespace (unshare --pid): stopping its first
# process ends all of them, slurmstepd and job processes included, even after a crash of this
# script. GPUs: Debian 12's Slurm 22.05 does not register gres/gpu on emulated nodes without
# device files, so each GPU is modelled as one CPU (`-c G` for a job of G GPUs on one node,
# `--exclusive` whole nodes for bigger gangs); GPUS_PER_NODE sets the node's CPU count.
set -euo pipefail

cmd=${1:?start|stop}
dir=${2:?state directory}

stop() {
  local pidfile="$dir/namespace.pid"
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR [NODES] [GPUS_PER_NODE]" >&2; exit 2; }
nodes=${3:?number of nodes}
gpus=${4:-8}
base_port=${SLURM_BENCH_PORT:-26800}
ctld_port=$base_port
first_node_port=$((base_port + 2))
last=$((nodes - 1))
mkdir -p "$dir"/{state,spool,log,run}
dir=$(cd "$dir" && pwd)
range=$(printf 'n[%04d-%04d]' 0 "$last")
ports=$(printf '[%d-%d]' "$first_node_port" $((first_node_port + last)))

cat > "$dir/slurm.conf" <<CONF
# Written by bench/slurm/cluster.sh: $nodes emulated nodes, each GPU modelled as one CPU.
ClusterName=bench
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=error
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# The high-throughput settings of Slurm's "High Throughput Computing Administration Guide":
# look at the whole queue on each pass, backfill every second, keep going after releasing locks.
SchedulerParameters=default_queue_depth=10000,sched_min_interval=0,bf_interval=1,bf_continue,bf_max_job_test=10000,bf_resolution=1
MaxJobCount=100000
MinJobAge=600
KillWait=2
InactiveLimit=0
Waittime=0
SlurmdTimeout=300
MessageTimeout=30
NodeName=$range NodeHostname=localhost NodeAddr=127.0.0.1 Port=$ports CPUs=$gpus Sockets=1 CoresPerSocket=$gpus ThreadsPerCore=1 RealMemory=100000 State=UNKNOWN
PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF

head -c 1024 /dev/urandom > "$dir/munge.key"
chmod 400 "$dir/munge.key"
chmod 700 "$dir/run"

# The namespace's first process starts the daemons and waits; when it dies, all of them die.
cat > "$dir/run/daemons.sh" <<SH
#!/usr/bin/env bash
munged --foreground --force --socket=$dir/run/munge.socket --key-file=$dir/munge.key \\
  --pid-file=$dir/run/munged.pid --log-file=$dir/log/munged.log --seed-file=$dir/run/munged.seed &
for _ in \$(seq 100); do [ -S $dir/run/munge.socket ] && break; sleep 0.05; done
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -i -f $dir/slurm.conf > $dir/log/slurmctld.out 2>&1 &
for i in \$(seq 0 $last); do
  n=\$(printf 'n%04d' \$i)
  mkdir -p $dir/spool/\$n
  slurmd -D -N \$n -f $dir/slurm.conf > $dir/log/slurmd-\$n.out 2>&1 &
done
wait
SH
chmod +x "$dir/run/daemons.sh"
setsid unshare --pid --fork --kill-child "$dir/run/daemons.sh" > "$dir/log/namespace.out" 2>&1 < /dev/null &
echo $! > "$dir/namespace.pid"

export SLURM_CONF="$dir/slurm.conf"
# Ready when every node is idle.
deadline=$((SECONDS + ${SLURM_BENCH_START_TIMEOUT:-600}))
while :; do
  idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | wc -l || true)
  [ "$idle" -ge "$nodes" ] && break
  if [ $SECONDS -ge $deadline ]; then
    echo "slurm: only $idle of $nodes nodes idle after ${SLURM_BENCH_START_TIMEOUT:-600} s; see $dir/log" >&2
    stop
    exit 1
  fi
  sleep 0.5
done
echo "slurm: $nodes nodes idle (each GPU modelled as one CPU: $gpus per node)"
