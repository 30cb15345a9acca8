#!/bin/sh
# slurm-local.sh -- a one-machine Slurm cluster (slurmctld + slurmd on this
# host, one partition "debug") kept entirely inside one folder, for trying
# `simsweep --slurm` and for tests/slurm_test.sh.  Run as root on Debian 12.
#
#   sh scripts/slurm-local.sh up DIR       install what is missing, start, wait
#                                          until the node is idle, print
#                                          `export SLURM_CONF=DIR/slurm.conf`
#   sh scripts/slurm-local.sh status DIR   what runs, sinfo and squeue
#   sh scripts/slurm-local.sh down DIR     cancel DIR's jobs, stop slurmd and
#                                          slurmctld (and munged if `up` started
#                                          it), wait until they have exited
#
# Everything Slurm writes (slurm.conf, state, spool, pid and log files, the
# job-completion log jobcomp.log) is in DIR; only the munge key
# (/etc/munge/munge.key, created when absent) and munged's socket in /run/munge
# are outside it.  `up` and `down` are idempotent: a second `up` finds the
# daemons alive (by DIR's pid files) and only waits for the node; a second
# `down` finds nothing to stop.
#
# Environment:
#   SLURM_LOCAL_CTLD_PORT  slurmctld's port (default 6817)
#   SLURM_LOCAL_D_PORT     slurmd's port    (default 6818)
#   SLURM_LOCAL_WAIT       seconds `up` waits for the idle node (default 30)
# Two clusters may run at once from two folders when their ports differ.
#
# Exit codes: 0 done; 1 a daemon did not start or stop in time (its log's tail
# is printed); 2 usage, not root, or packages could not be installed.
set -u

die() { echo "slurm-local: $*" >&2; exit "${EXIT:-1}"; }
usage() { EXIT=2 die "usage: slurm-local.sh up|down|status DIR"; }

[ $# -eq 2 ] || usage
cmd=$1
case $cmd in up | down | status) ;; *) usage ;; esac
mkdir -p "$2" 2>/dev/null || EXIT=2 die "cannot create $2"
DIR=$(cd "$2" && pwd) || EXIT=2 die "cannot enter $2"
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-6817}
D_PORT=${SLURM_LOCAL_D_PORT:-6818}
WAIT=${SLURM_LOCAL_WAIT:-30}
export SLURM_CONF="$CONF"

# alive PIDFILE: the pid in PIDFILE names a live process whose name is the
# file's (DIR/slurmd.pid: slurmd), so a stale file whose pid was reused by
# another program is not taken for the daemon.
alive() {
    [ -s "$1" ] || return 1
    pid=$(cat "$1" 2>/dev/null) || return 1
    case $pid in '' | *[!0-9]*) return 1 ;; esac
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$(basename "$1" .pid)" ]
}

# stop_pid NAME PIDFILE: SIGTERM the pid in PIDFILE, wait up to 20 s for it to
# exit, then SIGKILL it; removes PIDFILE.  Silent when nothing runs.
stop_pid() {
    if alive "$2"; then
        pid=$(cat "$2")
        kill "$pid" 2>/dev/null
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "slurm-local: $1 (pid $pid) ignored SIGTERM for 20 s; SIGKILL" >&2
            kill -9 "$pid" 2>/dev/null
            sleep 0.5
        fi
        echo "slurm-local: stopped $1 (pid $pid)"
    fi
    rm -f "$2"
}

munge_works() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

install_missing() {
    missing=""
    for p in slurm-wlm munge; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "slurm-local: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    # Debian's maintainer scripts try to start the daemons through
    # invoke-rc.d; in a container that is refused or absent, which is fine:
    # this script starts its own.
    apt-get update -qq >/dev/null 2>&1
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >"$DIR/apt.log" 2>&1 ||
        { tail -5 "$DIR/apt.log" >&2; EXIT=2 die "apt-get install$missing failed (see $DIR/apt.log)"; }
}

start_munge() {
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null ||
            die "cannot write /etc/munge/munge.key"
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
        echo "slurm-local: created /etc/munge/munge.key"
    fi
    munge_works && return 0
    # As Debian's unit runs it: as the munge user, /run/munge owned by munge.
    # When that fails (a key or folder owned by root, say), root with --force.
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    rm -f /run/munge/munged.pid
    if command -v runuser >/dev/null && runuser -u munge -- /usr/sbin/munged 2>"$DIR/munged.err"; then
        how="as user munge"
    elif /usr/sbin/munged --force 2>>"$DIR/munged.err"; then
        how="as root with --force"
    else
        cat "$DIR/munged.err" >&2
        die "munged did not start"
    fi
    i=0
    while ! munge_works && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    munge_works || die "munged started ($how) but munge -n | unmunge fails"
    cp /run/munge/munged.pid "$DIR/munged.pid" 2>/dev/null
    echo "slurm-local: started munged $how (pid $(cat "$DIR/munged.pid" 2>/dev/null))"
}

write_conf() {
    cpus=$(nproc)
    mem=$(free -m | awk '/^Mem:/ {print $2}')
    mkdir -p "$DIR/state" "$DIR/spool"
    cat >"$CONF" <<EOF
# Written by scripts/slurm-local.sh: one-node cluster, everything in $DIR
ClusterName=npusim
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$D_PORT
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MinJobAge=600
NodeName=$HOST CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
}

# node_state: the node's state as sinfo prints it (idle, mix, alloc, down*, ...)
node_state() { sinfo -h -N -n "$HOST" -o %t 2>/dev/null | head -1; }

tail_logs() {
    for f in slurmctld.log slurmd.log; do
        [ -s "$DIR/$f" ] && { echo "--- $DIR/$f (tail)"; tail -8 "$DIR/$f"; } >&2
    done
}

start_daemon() {  # NAME
    if alive "$DIR/$1.pid"; then
        echo "slurm-local: $1 already runs (pid $(cat "$DIR/$1.pid"))"
        return 0
    fi
    rm -f "$DIR/$1.pid"
    /usr/sbin/"$1" -f "$CONF" || { tail_logs; die "$1 did not start"; }
    i=0
    while ! alive "$DIR/$1.pid" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    alive "$DIR/$1.pid" || { tail_logs; die "$1 wrote no pid file in 10 s"; }
    echo "slurm-local: started $1 (pid $(cat "$DIR/$1.pid"))"
}

up() {
    [ "$(id -u)" -eq 0 ] || EXIT=2 die "must run as root (it starts slurmctld, slurmd and munged as root)"
    install_missing
    start_munge
    if ! alive "$DIR/slurmctld.pid" || [ ! -s "$CONF" ]; then write_conf; fi
    start_daemon slurmctld
    start_daemon slurmd
    t0=$(date +%s)
    while :; do
        st=$(node_state)
        case $st in idle | mix | alloc) break ;; esac
        if [ $(($(date +%s) - t0)) -ge "$WAIT" ]; then
            tail_logs
            die "node $HOST not idle after $WAIT s (sinfo says '${st:-nothing}')"
        fi
        sleep 0.5
    done
    echo "slurm-local: node $HOST $st after $(($(date +%s) - t0)) s"
    echo "export SLURM_CONF=$CONF"
}

down() {
    if alive "$DIR/slurmctld.pid"; then
        # Cancel the jobs first so no slurmstepd outlives slurmd.
        scancel --quiet --partition=debug 2>/dev/null
        i=0
        while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    stop_pid slurmd "$DIR/slurmd.pid"
    stop_pid slurmctld "$DIR/slurmctld.pid"
    # munged only if this folder's `up` started it
    stop_pid munged "$DIR/munged.pid"
}

status() {
    rc=0
    for d in munged slurmctld slurmd; do
        if alive "$DIR/$d.pid"; then
            echo "$d: running (pid $(cat "$DIR/$d.pid"))"
        elif [ $d = munged ]; then
            if munge_works; then echo "munged: running (not started by this folder)"; else echo "munged: not running"; fi
        else
            echo "$d: not running"
            rc=1
        fi
    done
    if alive "$DIR/slurmctld.pid"; then
        sinfo -N
        squeue
    fi
    echo "export SLURM_CONF=$CONF"
    return $rc
}

"$cmd"
