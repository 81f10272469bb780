#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The commands of tools/blkctx that are bash, run once tools/lib/cli.py has
# checked their arguments and environment: setup (and "bootstrap", which
# tools/blkctx runs where python3 is not installed yet) and "apt-ready
# DARCH" for tools/lib/selftests_step.py. The others are Python.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# the Python the bash calls: this checkout's, also where a selfcheck case
# gives REPO a repository of its own
LIB=$REPO/tools/lib
# absolute, so that builds run from another directory still find it
CACHE=$(realpath -m "${BLKCTX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blkctx}")
TREE=$CACHE/linux
BUILD=$CACHE/build
# The architectures (tools/lib/arches, which cli.py reads too): each one's
# cross compiler prefix and the Debian architecture of its guest, whose
# packages and package lists setup gets.
ARCHES=""
declare -A arch_cc=() guest_deb_arch=()
while read -r _name _linux _cc _deb _rest; do
	case $_name in "" | "#"*) continue ;; esac
	ARCHES+="${ARCHES:+ }$_name"
	arch_cc[$_name]=${_cc#-}
	guest_deb_arch[$_name]=$_deb
done <"$REPO/tools/lib/arches"
unset _name _linux _cc _deb _rest

# Debian's interpreters first: kunit.py and checkpatch need its python3 modules.
export PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

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

# shellcheck source=setup.sh
. "$REPO/tools/lib/setup.sh"

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
	case $cmd in
	bootstrap) do_bootstrap "$@" ;;
	setup) do_setup ;;
	# tools/lib/selftests_step.py's check before it makes a guest's root
	apt-ready) guest_apt_ready "$@" ;;
	*) die "no such command: $cmd (tools/blkctx help lists them)" ;;
	esac
}

# sourced (by a selfcheck case), it only defines the functions
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
