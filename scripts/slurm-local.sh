#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for stagebench's tests.
#
#   scripts/slurm-local.sh up     install (when missing) and start munged,
#                                 slurmctld and slurmd; wait until the node is idle
#   scripts/slurm-local.sh down   stop exactly the daemons `up` started, by pid
#   scripts/slurm-local.sh env    print the SLURM_CONF line to eval in a shell
#
# Everything lives in one directory of the script's own ($STAGEBENCH_SLURM_DIR,
# default /tmp/stagebench-slurm): config, munge socket and key copy, state,
# logs and pid files. Ports come from $STAGEBENCH_SLURM_PORT (slurmctld; slurmd
# uses the next one), so two clusters on one machine can coexist. Needs root
# (the daemons run as root here) and a mounted cgroup filesystem (slurmd 22.05
# wants one even with no cgroup plugin). Exits 3, saying why, only when Slurm
# cannot run here (not root, no cgroup filesystem), so callers can skip with
# a reason; any other failure (an install, a daemon that does not start, a
# node that never becomes idle) is a broken set-up and exits 4.
#
# Known traps handled here: the node advertises 8 CPUs (config_overrides) so
# `srun --ntasks 8` never waits for CPUs the machine lacks; every Slurm command
# needs SLURM_CONF because the config is not in /etc/slurm; the Debian service
# scripts do not run here, so the daemons are started by hand.
set -euo pipefail

DIR=${STAGEBENCH_SLURM_DIR:-/tmp/stagebench-slurm}
PORT=${STAGEBENCH_SLURM_PORT:-16817}
CPUS=${STAGEBENCH_SLURM_CPUS:-8}
CONF=$DIR/slurm.conf
NODE=$(hostname -s)

say() { echo "slurm-local: $*" >&2; }
cannot() { say "cannot run Slurm here: $*"; exit 3; }
broken() { say "set-up failed: $*"; exit 4; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install() {
    if command -v srun >/dev/null && command -v slurmctld >/dev/null \
        && command -v slurmd >/dev/null && command -v munged >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || broken "no apt-get to install slurm with"
    say "installing slurmctld slurmd slurm-client munge"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge \
        >"$DIR/apt.log" 2>&1 || {
        apt-get update -q >>"$DIR/apt.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge \
            >>"$DIR/apt.log" 2>&1 || broken "apt-get install failed (see $DIR/apt.log)"
    }
}

write_config() {
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/munge"
    chmod 700 "$DIR/munge"
    # munged insists on a key only its user can read; keep our own copy.
    if [ ! -f "$DIR/munge/munge.key" ]; then
        if [ -r /etc/munge/munge.key ]; then
            cp /etc/munge/munge.key "$DIR/munge/munge.key"
        else
            dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1 count=128 status=none
        fi
        chmod 400 "$DIR/munge/munge.key"
    fi
    cat >"$CONF" <<EOF
ClusterName=stagebench
SlurmctldHost=$NODE
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
MinJobAge=5
NodeName=$NODE CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

start_munged() {
    pid_alive "$DIR/munged.pid" && return
    munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" \
        --seed-file="$DIR/munge/munged.seed" \
        || broken "munged did not start (see $DIR/munged.log)"
}

wait_idle() {
    local i
    for i in $(seq 1 60); do
        local state
        state=$(SLURM_CONF=$CONF sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
        case "$state" in
            idle | mixed | allocated) return 0 ;;
            down* | drain*) SLURM_CONF=$CONF scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
        esac
        sleep 0.5
    done
    broken "the node did not become idle within 30 s (slurmd log: $DIR/slurmd.log)"
}

up() {
    [ "$(id -u)" = 0 ] || cannot "the daemons run as root here"
    grep -q cgroup /proc/mounts || cannot "no cgroup filesystem is mounted (slurmd 22.05 needs one)"
    mkdir -p "$DIR"
    install
    write_config
    start_munged
    if ! pid_alive "$DIR/slurmctld.pid"; then
        SLURM_CONF=$CONF slurmctld -i -f "$CONF" || broken "slurmctld did not start (see $DIR/slurmctld.log)"
    fi
    if ! pid_alive "$DIR/slurmd.pid"; then
        SLURM_CONF=$CONF slurmd -f "$CONF" || broken "slurmd did not start (see $DIR/slurmd.log)"
    fi
    wait_idle
    say "up: SLURM_CONF=$CONF ($NODE, $CPUS CPUs, port $PORT)"
    echo "export SLURM_CONF=$CONF"
}

down() {
    local name
    for name in slurmd slurmctld munged; do
        local pf=$DIR/$name.pid
        if pid_alive "$pf"; then
            local pid
            pid=$(cat "$pf")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
            say "stopped $name (pid $pid)"
        fi
        rm -f "$pf"
    done
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
