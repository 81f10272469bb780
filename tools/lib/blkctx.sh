#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The commands of tools/blkctx, run once tools/lib/cli.py has checked their
# arguments and environment: "blkctx.sh COMMAND ARGS" (and "bootstrap", which
# tools/blkctx runs where python3 is not installed yet).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# the Python the bash calls: this checkout's, also where a selfcheck case
# gives REPO a repository of its own
LIB=$REPO/tools/lib
# absolute, so that builds run from another directory still find it
CACHE=$(realpath -m "${BLKCTX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blkctx}")
TREE=$CACHE/linux
BUILD=$CACHE/build
TARBALL=${BLKCTX_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
JOBS=${BLKCTX_JOBS:-$(nproc)}
# the series' identity for the bash's own commits (bench's pristine build);
# tools/lib/tree_step.py has it for the tree's
IDENT_NAME="blkctx developers"
IDENT_EMAIL="devel@blkctx.invalid"
# The facts that differ between the architectures: tools/lib/arches, which
# cli.py reads too.
ARCHES=""
declare -A arch_linux=() arch_cc=() guest_deb_arch=() guest_triplet=() guest_arch_kconfig=()
while read -r _name _linux _cc _deb _triplet _kconfig; do
	case $_name in "" | "#"*) continue ;; esac
	ARCHES+="${ARCHES:+ }$_name"
	arch_linux[$_name]=$_linux
	arch_cc[$_name]=${_cc#-}
	guest_deb_arch[$_name]=$_deb
	guest_triplet[$_name]=$_triplet
	guest_arch_kconfig[$_name]=${_kconfig//,/ }
done <"$REPO/tools/lib/arches"
unset _name _linux _cc _deb _triplet _kconfig

export GIT_AUTHOR_NAME=$IDENT_NAME GIT_AUTHOR_EMAIL=$IDENT_EMAIL
export GIT_COMMITTER_NAME=$IDENT_NAME GIT_COMMITTER_EMAIL=$IDENT_EMAIL
# Debian's interpreters first: kunit.py and checkpatch need its python3 modules.
export PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}

say() { printf 'blkctx: %s\n' "$*" >&2; }
# die also tells a "tools/blkctx test" that runs this step that it failed
# (see report_counts), so that a step that dies after some results still
# counts one failure more.
die() {
	say "error: $*"
	report_counts die 0 1 0
	exit 1
}

# report_counts WHAT PASSED FAILED SKIPPED: results for the "tools/blkctx
# test" that runs this command as one of its steps, if any.
report_counts() {
	[ -z "${BLKCTX_RESULTS:-}" ] || echo "$*" >>"$BLKCTX_RESULTS"
}

# with_progress WHAT OBJECTS SINCE LOG CMD...: run CMD (a program, not a
# function), its output appended to LOG ("-": where it goes anyway), and
# while it runs say every minute (BLKCTX_PROGRESS_SECONDS) how long WHAT has
# been running and, with a directory OBJECTS, how many objects were built
# under it after the file SINCE was made (tools/lib/procs.py run).
with_progress() {
	local what=$1 objects=$2 since=$3 log=$4
	local -a opts=(--what "$what")
	shift 4
	[ -z "$objects" ] || opts+=(--objects "$objects" --since "$since")
	[ "$log" = - ] || opts+=(--log "$log")
	run_child python3 -B "$REPO/tools/lib/procs.py" run "${opts[@]}" -- "$@"
}

# Paths removed on every exit (cleanup_add PATH...). A subshell does not
# run the EXIT trap, so register in the shell that made the path.
BLKCTX_CLEANUP=()
cleanup_add() { BLKCTX_CLEANUP+=("$@"); }
cleanup() {
	[ ${#BLKCTX_CLEANUP[@]} -eq 0 ] || rm -rf -- "${BLKCTX_CLEANUP[@]}"
}
trap cleanup EXIT
# Long children run through run_child: in the background, in a process group
# of their own (main sets -m), waited for. bash runs a trap only once the
# foreground child has ended, but at once while it waits; the traps then stop
# the child's group and every process below the child (a QEMU, kunit.py's
# make) before the command ends. The group alone is not enough: a child that
# is itself a tools/blkctx step runs its pipelines as groups of their own,
# and defers its own trap until its foreground pipeline ends.
CHILD_PID=""
stop_child() {
	local below
	[ -n "$CHILD_PID" ] || return 0
	below=$(descendants "$CHILD_PID")
	kill -"$1" -- "-$CHILD_PID" 2>/dev/null || true
	# TERM below: a background job of a subshell ignores INT
	# shellcheck disable=SC2086 # a list of process ids
	[ -z "$below" ] || kill -TERM $below 2>/dev/null || true
}

# descendants PID: the processes below PID, read from /proc (no procps in a
# minimal Debian).
descendants() {
	local -A kids=()
	local stat line pid ppid queue=("$1") p c
	for stat in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$stat" || continue
		pid=${line%% *}
		# after the command's name, which may hold spaces: state, ppid
		read -r _ ppid _ <<<"${line##*) }"
		kids[$ppid]+=" $pid"
	done
	while [ ${#queue[@]} -gt 0 ]; do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		for c in ${kids[$p]:-}; do
			echo "$c"
			queue+=("$c")
		done
	done
}
trap 'stop_child INT; say "interrupted"; exit 130' INT
trap 'stop_child TERM; say "terminated"; exit 143' TERM

# run_child CMD...: CMD's status; it reads nothing (a background group that
# reads the terminal would stop).
run_child() {
	local rc=0
	"$@" </dev/null &
	CHILD_PID=$!
	wait "$CHILD_PID" || rc=$?
	CHILD_PID=""
	return $rc
}

# shellcheck source=tree.sh
. "$REPO/tools/lib/tree.sh"
# shellcheck source=selfcheck.sh
. "$REPO/tools/lib/selfcheck.sh"

# One run at a time per cache: every command that uses it takes
# $CACHE/.lock, and waits (saying for whom) while another run holds it.
# "tools/blkctx test" runs its steps as child processes, which inherit the
# locked descriptor (BLKCTX_LOCK_FD) and so hold the lock already.
cache_lock() {
	local holder
	mkdir -p "$CACHE"
	if [ -n "${BLKCTX_LOCK_FD:-}" ] &&
		[ "$(readlink "/proc/$$/fd/$BLKCTX_LOCK_FD" 2>/dev/null)" = "$CACHE/.lock" ] &&
		flock -n "$BLKCTX_LOCK_FD" 2>/dev/null; then
		return 0
	fi
	exec {BLKCTX_LOCK_FD}<>"$CACHE/.lock"
	if ! flock -n "$BLKCTX_LOCK_FD"; then
		holder=$(cat "$CACHE/.lock" 2>/dev/null || true)
		say "waiting for $CACHE, in use by ${holder:-another run}"
		flock "$BLKCTX_LOCK_FD"
	fi
	printf 'tools/blkctx %s (pid %s, user %s, since %s)\n' "$*" "$$" \
		"$(id -un)" "$(date '+%F %T')" >"$CACHE/.lock"
	export BLKCTX_LOCK_FD
}


# do_bootstrap COMMAND ARGS: tools/blkctx found no python3, which cli.py
# needs. setup installs it, and test and demo begin with setup: they run it
# first (as a command of its own, which an interrupt stops at once), once
# their settings are checked as cli.py checks them; anything else is refused
# before it does anything.
do_bootstrap() {
	local cmd=${1:-} v
	if ! command -v python3 >/dev/null; then
		case $#:$cmd in
		1:setup | 1:test | 1:demo) ;;
		*)
			say "python3 is not installed: tools/blkctx setup (as root) installs it"
			exit 2
			;;
		esac
		for v in BLKCTX_GUEST_TIMEOUT BLKCTX_GUEST_TEST_TIMEOUT BLKCTX_PROGRESS_SECONDS \
			BLKCTX_STOP_SECONDS; do
			[ -z "${!v:-}" ] || [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
				say "$cmd: $v: whole seconds, more than 0 (not \"${!v}\")"
				exit 2
			}
		done
		if [ "$cmd" = setup ]; then
			do_setup
			return
		fi
		say "$cmd: setup first, for the python3 that runs the rest"
		if ! run_child "$BASH" "$REPO/tools/lib/blkctx.sh" setup ||
			! command -v python3 >/dev/null; then
			if [ "$cmd" = test ]; then
				rm -f "$BUILD/test-results.json"
				echo "total: 0 passed, 1 failed, 0 skipped"
			fi
			say "$cmd: FAILED: setup"
			exit 1
		fi
	fi
	exec python3 "$REPO/tools/lib/cli.py" "$@"
}

# main COMMAND ARGS: the command, with the arguments cli.py made of the
# user's (so always valid, and in one form: --reroll=N, --from=IDENT).
main() {
	local cmd=$1
	set -m
	shift
	# the commands that change or read what is in $BLKCTX_CACHE
	case $cmd in
	bootstrap | setup | selfcheck | apt-ready) ;;
	*) cache_lock "$cmd" "$@" ;;
	esac
	case $cmd in
	bootstrap) do_bootstrap "$@" ;;
	setup) do_setup ;;
	# tools/lib/selftests_step.py's check before it makes a guest's root
	apt-ready) guest_apt_ready "$@" ;;
	selfcheck) do_selfcheck ;;
	*) die "no such command: $cmd (tools/blkctx help lists them)" ;;
	esac
}

# sourced (by a selfcheck case), it only defines the functions
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
