# shellcheck shell=bash
# the cases stub functions (called indirectly) and set globals in subshells
# shellcheck disable=SC2317
# selfcheck: tests of the tools themselves, in seconds, with no kernel tree,
# build or guest: shellcheck on every shell file, and each parser and check
# on canned input (tools/selfcheck/) or on small scratch trees, each case in
# a subshell of its own so that a die ends only that case.

SC_PASSED=0
SC_FAILED=0

# sc_result NAME OK [DETAIL]: count and print one case.
sc_result() {
	if [ "$2" -eq 0 ]; then
		SC_PASSED=$((SC_PASSED + 1))
		echo "ok       $1"
	else
		SC_FAILED=$((SC_FAILED + 1))
		echo "FAILED   $1"
		[ -z "${3:-}" ] || printf '%s\n' "$3" | sed 's/^/    /'
	fi
}

# sc_same NAME EXPECTED ACTUAL
sc_same() {
	if [ "$2" = "$3" ]; then
		sc_result "$1" 0
	else
		sc_result "$1" 1 "$(printf 'expected:\n%s\ngot:\n%s' "$2" "$3")"
	fi
}

# sc_run OUT CMD...: run CMD in a subshell, its output and errors in OUT;
# prints its exit status.
sc_run() {
	local out=$1 rc=0
	shift
	("$@") >"$out" 2>&1 </dev/null || rc=$?
	echo $rc
}

sc_shellcheck() {
	local f out rc
	if ! command -v shellcheck >/dev/null; then
		sc_result "shellcheck is installed (tools/blkctx setup installs it)" 1
		return
	fi
	# the libraries share the globals of tools/lib/blkctx.sh, which sources them:
	# checked alone, shellcheck cannot see where those are set or used
	# (SC2034, SC2153, SC2154); selfcheck sets them in subshells on purpose
	# (SC2030, SC2031)
	rc=0
	out=$(cd "$REPO" && shellcheck -x -e SC2030,SC2031,SC2034,SC2153,SC2154 \
		tools/blkctx tools/lib/*.sh .ci/run 2>&1) || rc=$?
	sc_result "shellcheck tools/blkctx tools/lib/* .ci/run" $rc "$out"
	# the Python beside the shell: it parses (no __pycache__ left behind)
	rc=0
	out=$(python3 -c 'import ast, sys
for f in sys.argv[1:]:
	ast.parse(open(f).read(), f)' "$REPO"/tools/lib/*.py 2>&1) || rc=$?
	sc_result "python3 parses tools/lib/*.py" $rc "$out"
	# the guest's /init, as the initramfs gets it
	rc=0
	out=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, selftests_step
selftests_step.write_init(sys.argv[1], 120)' "$SC_TMP/init" 2>&1 &&
		shellcheck -s sh "$SC_TMP/init" 2>&1) || rc=$?
	sc_result "shellcheck the guest's /init" $rc "$out"
}

# sc_kunit_counts ARGS: tools/lib/kunit_results.py's count and judgement.
sc_kunit_counts() {
	python3 -B "$REPO/tools/lib/kunit_results.py" "$@"
}

# sc_expected_warn: the report the KUnit step allows (kunit_step.py's).
sc_expected_warn() {
	PYTHONPATH=$REPO/tools/lib python3 -B -c 'import kunit_step; print(kunit_step.EXPECTED_WARN)'
}

# KUnit: the JSON that kunit.py's parser wrote for each tools/selfcheck/
# kunit-*.ktap, with the status kunit.py exited with.
sc_kunit() {
	local d=$REPO/tools/selfcheck name rc want allow status json
	while read -r name rc want; do
		sc_same "kunit counts: $name" "$want" \
			"$(sc_kunit_counts x86_64 "$d/kunit-$name.json" "$rc" 2>/dev/null)"
	done <<'CASES'
pass 0 2 0 0
skip 0 1 0 1
fail 1 1 1 0
crash 1 1 3 0
timeout 1 2 1 0
noplan 0 2 0 0
notests 1 0 1 0
allskip 0 0 1 2
CASES
	sc_same "kunit counts: no JSON (the build failed)" "0 1 0" \
		"$(sc_kunit_counts x86_64 "$SC_TMP/none.json" 1 2>/dev/null)"
	echo '{"name": "KUnit Test Group", "test_cases": [{"name": "a", "status": "PASS"},
		{"name": "b"}]}' >"$SC_TMP/nostatus.json"
	sc_same "kunit counts: a case with no status is a failure" "1 1 0" \
		"$(sc_kunit_counts x86_64 "$SC_TMP/nostatus.json" 0 2>/dev/null)"
	echo '[1]' >"$SC_TMP/list.json"
	sc_same "kunit counts: JSON not in the form kunit.py writes" "0 1 0" \
		"$(sc_kunit_counts x86_64 "$SC_TMP/list.json" 0 2>/dev/null)"
	sc_same "kunit counts: every case passed, kunit.py failed" "2 1 0" \
		"$(sc_kunit_counts x86_64 "$d/kunit-pass.json" 1 2>/dev/null)"
	# the kernel's console (kunit.py's test.log): a detector's report is one
	# failure more, but for the WARN that is expected
	while IFS='|' read -r name allow want; do
		sc_same "kunit judged: every case passed, test.log $name" "$want" \
			"$(sc_kunit_counts x86_64 "$d/kunit-pass.json" 0 --log "$d/$name" \
				${allow:+--allow "$(sc_expected_warn)"} 2>"$SC_TMP/kunit.err")$(
				sed -n 's/^blkctx: kunit: x86_64: \(.*\) (see .*/; \1/p; s/^    \[ *[0-9.]*\] /; /p; s/^kunit: x86_64: FAILED cannot read .*/; cannot read it/p' \
					"$SC_TMP/kunit.err" | tr -d '\n')"
	done <<'CASES'
guest-pass.log||2 0 0
kunit-warn.log|allow|2 1 0; the kernel reported errors; WARNING: CPU: 0 PID: 170 at fs/ext4/context.c:42 ext4_context_note_write+0x11/0x40
guest-lockdep.log|allow|2 1 0; the kernel reported errors; WARNING: possible circular locking dependency detected; BUG: sleeping function called from invalid context at kernel/time/sleep_timeout.c:269; INFO: task emmc_contexts:181 blocked for more than 5 seconds.
|allow|2 1 0; cannot read it
CASES
	# the KUnit step for one architecture (kunit_step.py's run_arch), with
	# kunit.py's JSON and console from tools/selfcheck/ in place of a run:
	# the expected WARN passes, another fails the run
	head -3 "$d/kunit-warn.log" >"$SC_TMP/kunit-expected-warn.log"
	# kunit.py's status|its JSON ("-": none)|test.log|the step's last line,
	# its status and what it reported to test
	while IFS='|' read -r status json name want; do
		sc_same "kunit step: kunit.py status $status, JSON ${json##*/}, test.log ${name##*/}" \
			"$want" "$(rm -rf "$SC_TMP/kunit-step"
			mkdir -p "$SC_TMP/kunit-step"
			: >"$SC_TMP/kunit-step/results"
			BLKCTX_RESULTS=$SC_TMP/kunit-step/results PYTHONPATH=$REPO/tools/lib \
				python3 -B - "$SC_TMP/kunit-step" "$status" "$json" "$name" <<'PY' 2>/dev/null | tr -d '\n'
import shutil, sys
import common, kunit_step
common.BUILD, status, json, log = sys.argv[1:]
def kunit(arch, sub, extra, tee):
    if json != "-":
        shutil.copyfile(json, extra[0][len("--json="):])
    shutil.copyfile(log, kunit_step.build_dir(arch) + "/test.log")
    return int(status)
shutil.os.makedirs(kunit_step.build_dir("x86_64"))
*_, ok = kunit_step.run_arch("x86_64", kunit)
with open(common.BUILD + "/results") as f:
    print(", status %d, reported %s" % (0 if ok else 1, f.read().strip()), end="")
PY
		)"
	done <<CASES
0|$d/kunit-pass.json|$d/guest-pass.log|kunit: x86_64: 2 passed, 0 failed, 0 skipped, status 0, reported kunit-x86_64 2 0 0
0|$d/kunit-pass.json|$SC_TMP/kunit-expected-warn.log|kunit: x86_64: 2 passed, 0 failed, 0 skipped, status 0, reported kunit-x86_64 2 0 0
0|$d/kunit-pass.json|$d/kunit-warn.log|kunit: x86_64: 2 passed, 1 failed, 0 skipped, status 1, reported kunit-x86_64 2 1 0
1|$d/kunit-pass.json|$d/guest-pass.log|kunit: x86_64: 2 passed, 1 failed, 0 skipped, status 1, reported kunit-x86_64 2 1 0
0|-|$d/guest-pass.log|kunit: x86_64: 0 passed, 1 failed, 0 skipped, status 1, reported kunit-x86_64 0 1 0
CASES
}

# sc_judge LOG STATUS [TREE]: the counts selftests_step.judged gives the
# console LOG of a boot that QEMU ended with STATUS (TREE's kunit_parser).
sc_judge() {
	PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, selftests_step
print(*selftests_step.judged("x86_64", sys.argv[1], int(sys.argv[2]), 900, sys.argv[3]))' \
		"$1" "$2" "${3:-$TREE}" || echo "status $?"
}

# The guests' KTAP, and the judgement of a boot (a guest that stops before
# the sentinel is one failure more).
sc_guest() {
	local d=$REPO/tools/selfcheck name rc want got
	if [ ! -f "$TREE/tools/testing/kunit/kunit_parser.py" ]; then
		sc_result "guest counts: the tree's kunit_parser is there (run tools/blkctx prepare)" 1 \
			"no $TREE/tools/testing/kunit/kunit_parser.py"
		return 0
	fi
	while read -r name rc want; do
		got=$(sc_judge "$d/guest-$name.log" "$rc" 2>/dev/null)
		sc_same "guest counts: $name (qemu status $rc)" "$want" "$got"
	done <<'CASES'
pass 0 3 0 0
fail 0 2 2 1
skip 0 1 0 2
timeout 0 1 1 0
stopped 1 2 1 0
stopped 124 2 1 0
pass 124 3 1 0
kasan 0 3 1 0
lockdep 0 3 1 0
shortplan 0 2 1 0
prefixed 0 4 1 2
strayplan 0 1 1 0
subtest 0 2 1 0
cut 124 1 2 0
oddlines 0 2 4 0
kunitfirst 0 1 0 0
notests 0 0 1 0
crjoin 0 3 1 0
CASES
	sc_same "guest counts: an empty log" "0 1 0" \
		"$(sc_judge /dev/null 0 2>/dev/null)"
	# the judge itself fails (here: no kunit_parser to count with)
	sc_same "guest counts: a parser that cannot run is a failure, named" "0 1 0
selftests: x86_64: FAILED tools/lib/ktap.py failed (status 1) on $d/guest-pass.log" \
		"$(sc_judge "$d/guest-pass.log" 0 "$SC_TMP/none" 2>"$SC_TMP/judge.err"
			grep FAILED "$SC_TMP/judge.err")"
	sc_same "kernel reports: after a lone carriage return, after a program's text" \
		"[    3.1] BUG: KASAN: use-after-free in ext4_foo+0x1/0x2
# writing inode tables: [    3.2] WARNING: CPU: 0 PID: 1 at fs/ext4/foo.c:1 ext4_bar+0x1/0x2" \
		"$(python3 -B "$REPO/tools/lib/guest.py" reports "$d/guest-crjoin.log")"
	# a boot that fails before QEMU starts leaves no earlier log to judge
	cp "$d/guest-pass.log" "$SC_TMP/old.log"
	sc_same "guest counts: a boot that failed early is not judged by the last log" "0 passes" \
		"$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, guest, selftests_step
status = guest.boot_guest("x86_64", sys.argv[2], sys.argv[2] + "/none.py", "k", "i", "",
                          sys.argv[1], 30, 60)
print(selftests_step.judged("x86_64", sys.argv[1], status, 30, sys.argv[2]).passed, "passes")' \
			"$SC_TMP/old.log" "$TREE" 2>/dev/null || echo "status $?")"
	# guest.py itself fails (a directory is no log)
	sc_same "guest counts: a judge that crashes is a failure" "0 1 0" \
		"$(sc_judge "$d" 0 2>/dev/null)"
	# what the judge says of a boot that failed
	while read -r name rc want; do
		got=$( (sc_judge "$d/guest-$name.log" "$rc" 2>&1 >/dev/null) | sed 's/^blkctx: //')
		if grep -qF -- "$want" <<<"$got"; then
			sc_result "guest judged: $name (qemu status $rc): ${want#selftests: x86_64: }" 0
		else
			sc_result "guest judged: $name (qemu status $rc): ${want#selftests: x86_64: }" 1 \
				"$(printf 'expected a line with:\n%s\ngot:\n%s' "$want" "$got")"
		fi
	done <<'CASES'
stopped 1 selftests: x86_64: the guest stopped before the end of the tests (a crash? qemu status 1)
stopped 1 selftests: x86_64: the last test to start was
stopped 124 selftests: x86_64: the guest did not finish in 900s (a hang?): killed it
stopped 137 selftests: x86_64: the guest did not finish in 900s (a hang?): killed it
pass 124 selftests: x86_64: the guest ran every test but did not stop by itself (qemu status 124)
notests 0 selftests: x86_64: ran no test
kasan 0 selftests: x86_64: the kernel reported errors
fail 0 selftests: x86_64: FAILED
CASES
	sc_same "kernel reports: every detector's, not the expected KUnit WARN" \
		"WARNING: possible circular locking dependency detected
BUG: sleeping function called from invalid context at kernel/time/sleep_timeout.c:269
INFO: task emmc_contexts:181 blocked for more than 5 seconds.
WARNING: CPU: 0 PID: 170 at fs/ext4/context.c:42 ext4_context_note_write+0x11/0x40" \
		"$( (python3 -B "$REPO/tools/lib/guest.py" reports "$d/guest-lockdep.log"
			python3 -B "$REPO/tools/lib/guest.py" reports "$d/kunit-warn.log" \
				--allow "$(sc_expected_warn)") | sed 's/^\[ *[0-9.]*\] //')"
}

# A guest's boot (tools/lib/guest.py boot) with a stand-in for QEMU: the
# machine of qemu_configs/, the console in the log, QEMU's status, the
# timeout, the progress lines, and an interrupt that stops QEMU at once.
sc_guest_boot() {
	local t=$SC_TMP/boot rc out start sig
	local -a boot=(python3 -B "$REPO/tools/lib/guest.py" boot --arch x86_64 --tree "$TREE"
		--config "$REPO/qemu_configs/x86_64.py" --kernel k --initrd i --append x=1
		--log "$t/log" --qemu "$t/qemu")
	if [ ! -f "$TREE/tools/testing/kunit/kunit_kernel.py" ]; then
		sc_result "guest boot: the tree's kunit_kernel is there (run tools/blkctx prepare)" 1 \
			"no $TREE/tools/testing/kunit/kunit_kernel.py"
		return 0
	fi
	mkdir -p "$t"
	printf '#!/bin/sh\necho "console line"\nexit 3\n' >"$t/qemu"
	chmod +x "$t/qemu"
	rc=0
	BLKCTX_KVM=1 "${boot[@]}" --timeout 30 2>"$t/err" || rc=$?
	sc_same "guest boot: plain emulation, the console in the log, QEMU's status" \
		"status 3
# $t/qemu -nodefaults -m 1024 -kernel k -initrd i -append console=ttyS0 x=1 -no-reboot -nographic -serial stdio -bios qboot.rom -accel tcg
console line" "status $rc
$(cat "$t/log")"
	printf '#!/bin/sh\necho $$ >"%s/pid"\nexec sleep 60\n' "$t" >"$t/qemu"
	rm -f "$t/pid"
	rc=0 start=$SECONDS
	"${boot[@]}" --timeout 2 2>"$t/err" || rc=$?
	out="status $rc in $((SECONDS - start < 5 ? 0 : SECONDS - start)) s"
	if [ ! -s "$t/pid" ]; then
		out="$out, QEMU never started"
	elif kill -0 "$(cat "$t/pid")" 2>/dev/null; then
		out="$out, QEMU still runs"
	fi
	sc_same "guest boot: stopped at its timeout, status 124, QEMU gone" "status 124 in 0 s" "$out"
	printf '#!/bin/sh\nprintf "1..2\\nok 1 a\\n"\nsleep 2.5\n' >"$t/qemu"
	rc=0
	"${boot[@]}" --timeout 30 --every 1 2>"$t/err" || rc=$?
	out=$(wc -l <"$t/err")
	if [ $rc -eq 0 ] && [ "$out" -ge 1 ] && [ "$out" -le 3 ] && ! grep -vx \
		'blkctx: guest x86_64: running for 0 min [0-9] s; 1 of 2 tests done' "$t/err" >/dev/null; then
		sc_result "guest boot: a progress line a second with the tests so far" 0
	else
		sc_result "guest boot: a progress line a second with the tests so far" 1 \
			"$(echo "status $rc, then:"; cat "$t/err")"
	fi
	# a QEMU that ignores TERM is killed, even when a signal comes while
	# the stop waits for it
	mkdir -p "$t/stubborn"
	printf '#!/bin/sh\necho $$ >"%s/grandchild"\ntrap %s TERM\ntrap "" INT\nwhile :; do sleep 0.2; done\n' \
		"$t/stubborn" "': >$t/stubborn/started'" >"$t/qemu"
	rc=0 start=$SECONDS
	BLKCTX_STOP_SECONDS=1 "${boot[@]}" --timeout 1 2>"$t/err" || rc=$?
	out="status $rc in $((SECONDS - start < 5 ? 0 : SECONDS - start)) s"
	! kill -0 "$(cat "$t/stubborn/grandchild")" 2>/dev/null || out="$out, QEMU still runs"
	! grep -q "did not stop; killed it" "$t/err" || out="$out, killed"
	sc_same "guest boot: a QEMU that ignores TERM is killed" "status 124 in 0 s, killed" "$out"
	sc_signal_run "$t/stubborn" INT "BLKCTX_STOP_SECONDS=1 exec ${boot[*]@Q} --timeout 1"
	sc_same "guest boot: SIGINT while the timeout's stop waits: QEMU killed all the same" \
		"status 130 in 0 s" "$(sc_signal_outcome "$t/stubborn" QEMU)"
	# an interrupt while the QEMU parameters load is an interrupt, not an
	# error of the parameters
	mkdir -p "$t/slow"
	printf 'import os, time
open("%s/grandchild", "w").write(str(os.getpid()))
open("%s/started", "w").close()
time.sleep(30)
' \
		"$t/slow" "$t/slow" >"$t/slow/config.py"
	sc_signal_run "$t/slow" INT "exec ${boot[*]@Q} --timeout 60 --config '$t/slow/config.py'"
	sc_same "guest boot: SIGINT while the QEMU parameters load" \
		"status 130 in 0 s" "$(sc_signal_outcome "$t/slow" boot)"
	# QEMU in a session of its own: only guest.py can stop it
	sc_signal_child "$t"
	printf '#!/bin/sh\nexec sh %s/child\n' "$t" >"$t/qemu"
	for sig in TERM INT; do
		sc_signal_run "$t" "$sig" "exec ${boot[*]@Q} --timeout 60"
		sc_same "guest boot: SIG$sig stops QEMU and the boot at once" \
			"status $((128 + $(kill -l "$sig"))) in 0 s" "$(sc_signal_outcome "$t" QEMU)"
	done
}

# procs.run, which every build and boot runs through: a line a tick while
# the command runs, with the objects built since a file; the command's
# output in its log and its status kept; the details of a guest.
sc_progress() {
	local d=$REPO/tools/selfcheck out=$SC_TMP/progress rc
	mkdir -p "$out.d"
	touch -d '1 hour ago' "$out.d/since" "$out.d/old.o"
	: >"$out.d/new.o"
	rc=$(BLKCTX_PROGRESS_SECONDS=1 sc_procs 'with open(sys.argv[1] + ".log", "w") as out:
    print(procs.run(["sh", "-c", "echo made; sleep 2.5; exit 3"], "step",
                    procs.progress_seconds(), out=out,
                    detail=lambda: procs.objects_since(sys.argv[1] + ".d", sys.argv[1] + ".d/since")))' \
		"$out" 2>"$out.err")
	sc_same "progress: the command's status" 3 "$rc"
	sc_same "progress: the command's output in its log" made "$(cat "$out.log")"
	# a loaded machine may tick at 2 and 3 s instead of 1 and 2 s
	rc=$(wc -l <"$out.err")
	if [ "$rc" -ge 1 ] && [ "$rc" -le 3 ] &&
		! grep -vx 'blkctx: step: running for 0 min [0-9] s; 1 objects compiled' "$out.err" >/dev/null; then
		sc_result "progress: a line a second while it runs" 0
	else
		sc_result "progress: a line a second while it runs" 1 "$(cat "$out.err")"
	fi
	sc_same "progress: a guest's tests so far" \
		"2 of 2 tests done, last started: mmc: emmc_contexts (1 of its cases done)" \
		"$(python3 -B "$REPO/tools/lib/guest.py" so-far "$d/guest-pass.log")"
	sc_same "progress: a guest that has not planned yet" \
		"0 of ? tests done" "$(python3 -B "$REPO/tools/lib/guest.py" so-far /dev/null)"
	# the command holds none of the caller's files: a guest's lock would
	# stay taken until it ended
	rc=$(sc_procs 'import fcntl, subprocess
with open(sys.argv[1] + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    procs.run(["sh", "-c", "sleep 1 & echo started"], "step", 30, out=subprocess.DEVNULL)
print(subprocess.run(["flock", "-n", sys.argv[1] + ".lock", "true"]).returncode and "held" or "free")' \
		"$out")
	sc_same "progress: the caller's lock is free once the command is done" free "$rc"
	rc=$(sc_procs 'with open(sys.argv[1] + ".missing", "w") as out:
    print("status", procs.run([sys.argv[1] + ".no-such-program"], "step", 60, out=out))
print("log:", open(sys.argv[1] + ".missing").read().strip())' "$out" 2>/dev/null)
	sc_same "progress: a program that cannot run" \
		"status 127
log: step: cannot run $out.no-such-program: No such file or directory" "$rc"
	# the builds' make
	while read -r arch want; do
		sc_same "progress: the builds' make for $arch" "$want" \
			"$(sc_procs 'import common; print(*common.arch_make(sys.argv[1], "/t"))' "$arch")"
	done <<'CASES'
x86_64 make -s -C /t ARCH=x86_64
arm make -s -C /t ARCH=arm CROSS_COMPILE=arm-linux-gnueabihf-
CASES
}

# sc_procs CODE ARGS...: python3 CODE ARGS with procs and sys imported; a
# status other than 0 is printed.
sc_procs() {
	local code=$1
	shift
	PYTHONPATH=$REPO/tools/lib python3 -B -c "import sys, procs
$code" "$@" || echo "status $?"
}

# sc_signal_child DIR: DIR/child, a grandchild in the foreground of its
# parent (as QEMU under timeout), which says when it has started.
sc_signal_child() {
	mkdir -p "$1"
	cat >"$1/child" <<EOF
sh -c 'echo \$\$ >"$1/grandchild"; : >"$1/started"; exec sleep 60'
EOF
}

# sc_signal_outcome DIR WHO: what sc_signal_run saw, as the cases expect it.
sc_signal_outcome() {
	local out="status $SIG_RC in $SIG_SECONDS s"
	[ "$SIG_ALIVE" = dead ] || out="$out, the $2's sleep still runs"
	! grep -q 'went on' "$1/out" || out="$out, it went on"
	echo "$out"
}

# sc_signal_run DIR SIG SCRIPT: run SCRIPT with bash, its output in
# DIR/out, send it SIG once DIR/child's grandchild has started; set SIG_RC,
# SIG_SECONDS (0 under 5) and SIG_ALIVE (whether the grandchild still runs).
# Not in a subshell: a background job there would ignore SIGINT. SIGINT
# reset to its default too: a run started with it ignored (nohup ... &)
# passes that on, and bash cannot trap a signal ignored on entry.
sc_signal_run() {
	local t=$1 sig=$2 pid start=$SECONDS rc=0 alive=dead
	rm -f "$t/started"
	env --default-signal=INT bash -c "$3" >"$t/out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ ! -e "$t/started" ] || break
		sleep 0.1
	done
	kill -"$sig" "$pid"
	wait "$pid" || rc=$?
	# killed, it may stay a zombie for a moment
	for _ in $(seq 20); do
		kill -0 "$(cat "$t/grandchild")" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$(cat "$t/grandchild")" 2>/dev/null || alive=alive
	SIG_RC=$rc SIG_SECONDS=$((SECONDS - start < 5 ? 0 : SECONDS - start)) SIG_ALIVE=$alive
}

# SIGTERM or SIGINT to a command stops it at once, and with it the whole
# process group of the child it runs (a QEMU and what it started), not only
# once that child has ended by itself.
sc_interrupt() {
	local t=$SC_TMP/interrupt sig out
	sc_signal_child "$t"
	for sig in TERM INT; do
		sc_signal_run "$t" "$sig" "set -m; . '$REPO/tools/lib/blkctx.sh'
			run_child sh '$t/child'
			echo 'went on after the child'"
		out=$(sc_signal_outcome "$t" child)
		sc_same "interrupt: SIG$sig ends the command and its child's group at once" \
			"status $((128 + $(kill -l "$sig"))) in 0 s" "$out"
	done
	# a step of test's: a tools/blkctx process whose foreground pipeline is
	# a group of its own, with the grandchild under it
	for sig in TERM INT; do
		sc_signal_run "$t" "$sig" "set -m; . '$REPO/tools/lib/blkctx.sh'
			run_child bash -c \"set -m; . '$REPO/tools/lib/blkctx.sh'
				sh '$t/child' | cat
				echo 'the step went on'\"
			echo 'went on after the step'"
		out="status $SIG_RC"
		[ "$SIG_ALIVE" = dead ] || out="$out, the step's sleep still runs"
		sc_same "interrupt: SIG$sig ends a step's foreground pipeline too" \
			"status $((128 + $(kill -l "$sig")))" "$out"
	done
}

# A fake tools/blkctx for test's steps: each step does what its name says.
sc_fake_steps() {
	cat >"$SC_TMP/fake" <<EOF
#!/usr/bin/env bash
. "$REPO/tools/lib/blkctx.sh"
case \${SC_FAKE:-}:\$1 in
setupfails:*) die "setup failed" ;;
lock:*) [ "\$(readlink "/proc/\$\$/fd/\${BLKCTX_LOCK_FD:-none}")" = "\$CACHE/.lock" ] &&
	flock -n "\${BLKCTX_LOCK_FD:-none}" || die "\$1 does not hold test's lock"
	report_counts "\$1" 1 0 0 ;;
pass:*) report_counts "\$1" 1 0 0 ;;
# the child in a pipeline of its own group, as a step's guest runs
hang:setup) set -m; sh "$SC_TMP/test-interrupt/child" | cat ;;
*:setup | *:selfcheck | *:prepare | *:mail-check | *:demo | *:warnings) exit 0 ;;
*:checkpatch) exit 1 ;;
*:kunit) report_counts kunit-x86_64 5 0 1; die "the arm kernel does not build" ;;
silent:selftests) exit 0 ;;
silent:bench-check) report_counts bench-check 2 0 0; exit 1 ;;
*:selftests) report_counts selftests 3 1 0; exit 1 ;;
*:bench-check) report_counts bench-check 2 0 0 ;;
*:pahole) false; echo "not reached" ;;
esac
EOF
	chmod +x "$SC_TMP/fake"
}

# sc_py_test: the test command of tools/lib/runner.py, its cache the
# scratch $SC_TMP/cache (its lock, build/test-results.json), its steps
# through the fake tools/blkctx.
sc_py_test() {
	BLKCTX_CACHE=$SC_TMP/cache BLKCTX_SELF=${BLKCTX_SELF:-$SC_TMP/fake} TMPDIR=$SC_TMP \
		PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, runner
sys.exit(runner.main(["test"]))'
}

sc_test_steps() {
	local out=$SC_TMP/test.out rc json=$SC_TMP/cache/build/test-results.json
	sc_fake_steps
	rc=$(sc_run "$out" sc_py_test)
	# selfcheck, mail-check, kunit 5 + 1 skipped, selftests 3, bench-check 2,
	# demo, warnings; checkpatch, kunit's die, selftests' failure, pahole's set -e exit
	sc_same "test: every step counted, dying ones too" \
		"1 total: 14 passed, 4 failed, 1 skipped" "$rc $(grep '^total:' "$out")"
	# the JSON: the same totals, which are its steps' sums, and each step
	# with what it reported
	sc_same "test: the JSON results match the closing line, step by step" \
		"14 4 1 = 14 4 1; 11 steps; kunit: 1 [kunit-x86_64 5 0 1, die 0 1 0]" \
		"$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
steps = d["steps"]
kunit = [s for s in steps if s["step"] == "kunit"][0]
print(d["passed"], d["failed"], d["skipped"], "=",
      sum(s["passed"] for s in steps), sum(s["failed"] for s in steps),
      sum(s["skipped"] for s in steps), end="; ")
print(len(steps), "steps", end="; ")
print("kunit:", kunit["status"], "[" + ", ".join("%s %d %d %d" % (r["name"], r["passed"],
      r["failed"], r["skipped"]) for r in kunit["reports"]) + "]")' "$json" 2>&1)"
	rc=$(SC_FAKE=silent sc_run "$out" sc_py_test)
	sc_same "test: a step that reports no result fails, as does one that fails with none failed" \
		"1 total: 11 passed, 5 failed, 1 skipped" "$rc $(grep '^total:' "$out")"
	rc=$(SC_FAKE=setupfails sc_run "$out" sc_py_test)
	sc_same "test: a failed setup still ends with the total" \
		"1 total: 0 passed, 1 failed, 0 skipped" "$rc $(grep '^total:' "$out")"
	sc_same "test: a failed setup still writes the JSON" "0 1 0 setup" \
		"$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["passed"], d["failed"], d["skipped"], " ".join(s["step"] for s in d["steps"]))' "$json" 2>&1)"
	# each step holds the cache's lock that test took (else it would wait
	# for it for ever): the runner passes the descriptor on
	rc=$( (unset BLKCTX_LOCK_FD
		SC_FAKE=lock sc_run "$out" sc_py_test) )
	sc_same "test: every step holds test's lock" \
		"0 total: 9 passed, 0 failed, 0 skipped" "$rc $(grep '^total:' "$out")"
	# CI tests the patch files: prepare --force there, plain prepare elsewhere
	printf '#!/bin/sh\necho "$*" >>"%s/steps"\n' "$SC_TMP" >"$SC_TMP/fake-args"
	chmod +x "$SC_TMP/fake-args"
	rc=$(for ci in true ""; do
		rm -f "$SC_TMP/steps"
		CI=$ci BLKCTX_SELF=$SC_TMP/fake-args sc_run "$out" sc_py_test >/dev/null
		sed -n 2p "$SC_TMP/steps"
	done)
	sc_same "test: prepare --force in CI only" "prepare --force
prepare" "$rc"
}

# SIGTERM or SIGINT to test, or to its step runner alone (as a CI job's
# timeout would), ends the running step and what it started, at once, and
# the runner leaves no temporary file.
sc_test_interrupt() {
	local t=$SC_TMP/test-interrupt sig out
	sc_signal_child "$t"
	mkdir -p "$t/tmp"
	sc_fake_steps
	for sig in TERM INT; do
		sc_signal_run "$t" "$sig" "BLKCTX_CACHE='$SC_TMP/cache' SC_FAKE=hang TMPDIR='$t/tmp' \
			BLKCTX_SELF='$SC_TMP/fake' PYTHONPATH='$REPO/tools/lib' exec python3 -B -c \
			'import sys, runner
sys.exit(runner.main([\"test\"]))'"
		out=$(sc_signal_outcome "$t" step)
		[ -z "$(ls -A "$t/tmp")" ] || out="$out, left $(ls -A "$t/tmp")"
		sc_same "interrupt: SIG$sig ends test and its running step at once" \
			"status $((128 + $(kill -l "$sig"))) in 0 s" "$out"
		sc_signal_run "$t" "$sig" "TMPDIR='$t/tmp' SC_FAKE=hang exec python3 -B \
			'$REPO/tools/lib/runner.py' --blkctx '$SC_TMP/fake' --json '$t/r.json'"
		out=$(sc_signal_outcome "$t" step)
		[ -z "$(ls -A "$t/tmp")" ] || out="$out, left $(ls -A "$t/tmp")"
		sc_same "interrupt: SIG$sig to the step runner ends its running step at once" \
			"status $((128 + $(kill -l "$sig"))) in 0 s" "$out"
	done
	# a closing line that cannot be written fails the run and leaves no
	# results file behind
	out=$( (BLKCTX_CACHE=$SC_TMP/cache SC_FAKE=pass TMPDIR=$t/tmp BLKCTX_SELF=$SC_TMP/fake \
		PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, runner
sys.exit(runner.main(["test"]))' >/dev/full 2>/dev/null
		echo "status $?, left: $(ls -A "$t/tmp")"))
	sc_same "test: a closing line that cannot be written fails, leaving nothing behind" \
		"status 1, left: " "$out"
	# what cannot be run or written fails the run, with the closing line
	out=$(python3 -B "$REPO/tools/lib/runner.py" --blkctx "$t/none" --json "$t/r.json" 2>&1
		echo "status $?")
	sc_same "test: a step that cannot be run fails, with the closing line" \
		"total: 0 passed, 1 failed, 0 skipped status 1" \
		"$(grep -E '^(total|status)' <<<"$out" | paste -sd ' ')"
	out=$(SC_FAKE=pass python3 -B "$REPO/tools/lib/runner.py" --blkctx "$SC_TMP/fake" \
		--json "$SC_TMP/fake/r.json" 2>&1
		echo "status $?")
	sc_same "test: JSON that cannot be written fails the run, with the closing line" \
		"total: 9 passed, 0 failed, 0 skipped status 1" \
		"$(grep -E '^(total|status)' <<<"$out" | paste -sd ' ')"
}

# sc_build_step CODE ARGS...: python3 CODE ARGS with build_step imported,
# its cache the scratch one; a status other than 0 is printed (as
# sc_tree_step's).
sc_build_step() {
	local code=$1
	shift
	BLKCTX_CACHE=$SC_TMP/build-step PYTHONPATH=$REPO/tools/lib \
		python3 -B -c "import sys, build_step
$code" "$@" 2>&1 || echo "status $?"
}

# warnings: a build that cannot measure warnings fails, and the objects are
# compiled on every run (a fake make prints a W=1 warning only when it
# compiles an object, as make does).
sc_warnings() {
	local t=$SC_TMP/warn rc c what args want
	mkdir -p "$t/tree/block" "$t/out/block"
	: >"$t/tree/block/bio.c"
	printf '/bin/sh: 1: sparse: not found\nmake[3]: *** [scripts/Makefile.build:244: block/bio.o] Error 127\n' >"$t/nosparse.log"
	printf 'make[1]: *** [Makefile:1989: block] Error 2\n' >"$t/noerror.log"
	printf 'block/bio.c:12:3: error: expected ; before }\nmake: *** [block/bio.o] Error 1\n' >"$t/error.log"
	for c in "sparse missing fails|nosparse 2|a tool is missing: /bin/sh: 1: sparse: not found" \
		"make failing with no error line fails|noerror 2|make exited with status 2, and no warning or error says why" \
		"a compile error explains a failed make|error 1|None" \
		"a build that worked is compared|noerror 0|None"; do
		IFS='|' read -r what args want <<<"$c"
		sc_same "warnings: $what" "$want" "$(sc_build_step \
			'print(build_step.warning_broken(sys.argv[1], int(sys.argv[2])))' \
			"$t/${args% *}.log" "${args#* }")"
	done
	# a make that warns for each object it builds
	cat >"$t/make" <<'EOF'
tree=$1
shift
out=
for a; do case $a in O=*) out=${a#O=} ;; esac; done
for a; do
	case $a in
	*.o)
		[ ! -f "$out/$a" ] || continue
		echo "$tree/${a%.o}.c:3:1: warning: no previous prototype [-Wmissing-prototypes]"
		: >"$out/$a"
		;;
	esac
done
EOF
	rc=$(sc_build_step 'make = lambda arch, tree: ["sh", sys.argv[1] + "/make", tree]
for log in ("1.log", "2.log"):
    build_step.warning_build("x86_64", sys.argv[1] + "/tree", sys.argv[1] + "/out",
                             sys.argv[1] + "/" + log, ["block/bio.o", "block/new.o"], make)
print(*build_step.warning_lines(sys.argv[1] + "/tree", sys.argv[1] + "/2.log"), sep="\n")' "$t")
	sc_same "warnings: a second run sees the W=1 warning again, of files both trees have" \
		"block/bio.c: warning: no previous prototype [-Wmissing-prototypes]" "$rc"
	rc=$(for tool in sparse clang; do
		sc_build_step 'import shutil
shutil.which = lambda name: None if name == sys.argv[1] else "/usr/bin/" + name
print("status", build_step.main(["warnings", "x86_64"], lock=False))' "$tool"
	done)
	sc_same "warnings: without sparse or clang it fails, saying why" \
		"blkctx: error: sparse not found: run tools/blkctx setup
status 1
blkctx: error: clang not found: run tools/blkctx setup
status 1" "$rc"
	# the compilers: gcc with sparse, clang with the LLVM tools and without
	rc=$(sc_build_step 'make = lambda arch, tree: ["echo", "make"]
for arch in ("x86_64", "arm"):
    for llvm in (False, True):
        build_step.warning_build(arch, sys.argv[1] + "/tree", "/o", sys.argv[1] + "/cc.log",
                                 ["block/bio.o"], make, llvm)
        print(open(sys.argv[1] + "/cc.log").read().split(" -k ")[0])' "$t")
	sc_same "warnings: gcc with sparse, clang without, for each architecture" \
		"make O=/o CC=ccache gcc KCFLAGS=-g W=1 C=2 CHECK=sparse
make O=/o LLVM=1 CC=ccache clang KCFLAGS=-g W=1
make O=/o CC=ccache arm-linux-gnueabihf-gcc KCFLAGS=-g W=1 C=2 CHECK=sparse
make O=/o LLVM=1 CC=ccache clang KCFLAGS=-g W=1" "$rc"
	# a u64 % u64 that arm32 leaves to libgcc: the kernel has no such helper
	printf 'unsigned long long f(unsigned long long a, unsigned long long b) { return a %% b; }\n' \
		>"$t/div.c"
	printf 'unsigned int g(unsigned int a) { return a / 3; }\n' >"$t/nodiv.c"
	rc=$(for f in div nodiv; do
		arm-linux-gnueabihf-gcc -O2 -c -o "$t/out/$f.o" "$t/$f.c" || echo "cannot compile $f.c"
	done
	sc_build_step 'print(*build_step.division_helpers("arm", sys.argv[1], ["div.o", "nodiv.o"]))
print(build_step.common.run_command("w", lambda: build_step.division_helpers("arm", sys.argv[1], ["none.o"])))' \
		"$t/out" 2>&1 | sed 's/: nm cannot read .*/: nm cannot read none.o/')
	sc_same "warnings: a call to a 64-bit division helper is found; an object nm cannot read fails" \
		"div.o: __aeabi_uldivmod
blkctx: error: warnings: nm cannot read none.o
1" "$rc"
	# one architecture's verdict with each compiler: the builds stood in for
	# (no warning), the objects those of above
	mkdir -p "$t/build/kunit-arm"
	: >"$t/build/kunit-arm/vmlinux"
	rc=$(sc_build_step 'import os
build_step.kunit_step.build_dir = lambda arch: sys.argv[1] + "/build/kunit-" + arch
build_step.pahole_step.ready = lambda arch, llvm=False: None
build_step.pahole_step.build_dir = lambda side, arch, llvm=False: sys.argv[1] + "/out"
build_step.pahole_step.pristine_worktree = lambda: "/pristine"
build_step.common.BUILD = sys.argv[1] + "/build"
def warning_build(arch, tree, out, log, objects, llvm=False):
    open(log, "w").close()
    return 0
build_step.warning_build = warning_build
for objects in (["nodiv.o"], ["nodiv.o", "div.o"]):
    build_step.touched_objects = lambda arch: objects
    for llvm in (False, True):
        print(*build_step.warnings_arch("arm", llvm))
# a patched build that fails with a compile error, as the pristine one
def failing(arch, tree, out, log, objects, llvm=False):
    open(log, "w").write("block/bio.c:1:1: error: x\n")
    return 2
build_step.warning_build = failing
print(*build_step.warnings_arch("arm", True))' "$t" | grep -v '^blkctx: warnings: arm')
	sc_same "warnings: a 64-bit division helper or a failed build fails the architecture, with either compiler" \
		"warnings: arm gcc: no new W=1 and sparse warnings, no 64-bit division helper, in nodiv.o True
warnings: arm clang: no new W=1 warnings, no 64-bit division helper, in nodiv.o True
warnings: arm gcc: calls to 64-bit division helpers the kernel does not have (use div_u64() and friends):
    div.o: __aeabi_uldivmod False
warnings: arm clang: calls to 64-bit division helpers the kernel does not have (use div_u64() and friends):
    div.o: __aeabi_uldivmod False
block/bio.c:1:1: error: x
warnings: arm clang: the pristine build failed: a compile error (see above): FAILED False" "$rc"
	# the command: each architecture with gcc and with clang, failed when one is
	rc=$(sc_build_step 'import shutil
shutil.which = lambda name: "/usr/bin/" + name
build_step.common.tree_current = lambda: None
def verdict(arch, llvm=False):
    return "%s %s" % (arch, "clang" if llvm else "gcc"), not (arch == "arm" and llvm)
build_step.warnings_arch = verdict
print("status", build_step.command_warnings([]))')
	sc_same "warnings: every architecture with gcc and with clang" \
		"x86_64 gcc
x86_64 clang
arm gcc
arm clang
status 1" "$rc"
}

# build-each: the kunitconfig lines whose symbol a commit has must hold.
sc_kconfig() {
	local t=$SC_TMP/kconfig
	mkdir -p "$t/tree/drivers"
	printf 'config FOO\n\tbool "foo"\nmenuconfig BAR\n\tbool "bar"\nconfig NOPE\n\tbool "nope"\n' \
		>"$t/tree/drivers/Kconfig"
	printf 'CONFIG_FOO=y\nCONFIG_BAR=y\nCONFIG_LATER=y\nCONFIG_NOPE=n\n# a comment\n' >"$t/want"
	printf 'CONFIG_FOO=y\n# CONFIG_BAR is not set\nCONFIG_NOPE=m\n' >"$t/config"
	git -C "$t/tree" init -q
	git -C "$t/tree" add -A
	sc_same "build-each: a symbol that exists but is off, one that is on but must not be" \
		"CONFIG_BAR=y CONFIG_NOPE=n" "$(sc_build_step 'print(*build_step.kconfig_unmet(
    open(sys.argv[1]).read().splitlines(), sys.argv[2], build_step.kconfig_symbols(sys.argv[3])))' \
			"$t/want" "$t/config" "$t/tree")"
	# qemu_configs' lines as kconfig_unmet compares them: whole lines of
	# a .config, without the Python string's closing quotes
	local a bad=
	for a in $ARCHES; do
		bad+=$(sc_build_step 'print(*build_step.kunit_want(sys.argv[1]), sep="\n")' "$a" |
			grep -vxE 'CONFIG_[A-Za-z0-9_]+=([ynm]|[0-9]+|"[^"]*")' || true)
	done
	sc_same "build-each: what kunitconfig and qemu_configs want" "" "$bad"
	sc_same "build-each: qemu_configs' last line is read" "CONFIG_ARM_PSCI=y" \
		"$(sc_build_step 'print(build_step.kunit_want("arm")[-1])')"
	# the guests' own check, on a kernel with all they need but two
	mkdir -p "$t/target"
	printf 'CONFIG_MMC=y\nCONFIG_MD=y\n# a comment\n' >"$t/target/config"
	{
		for a in $(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import common, selftests_step
print(*selftests_step.GUEST_KCONFIG + common.ARCHES["x86_64"].kconfig)'); do
			case $a in
			DEBUG_FS) echo "# CONFIG_DEBUG_FS is not set" ;;
			SERIAL_8250_CONSOLE) ;;
			*) echo "CONFIG_$a=y" ;;
			esac
		done
		printf 'CONFIG_MMC=y\nCONFIG_MD=m\n'
	} >"$t/guest.config"
	sc_same "selftests: the options a guest and its targets need, missing from a kernel" \
		"CONFIG_DEBUG_FS=y CONFIG_SERIAL_8250_CONSOLE=y CONFIG_MD=y" \
		"$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, selftests_step
print(*selftests_step.missing_kconfig(sys.argv[1], "x86_64", [sys.argv[2]]))' \
			"$t/guest.config" "$t/target" 2>&1 || echo "status $?")"
}

# A scratch kernel tree and repository: a pristine commit and one patch.
sc_tree() {
	local t=$1
	mkdir -p "$t/repo/series" "$t/repo/kunit" "$t/repo/selftests" "$t/cache/linux"
	(
		cd "$t/cache/linux" || exit 1
		git init -q -b base
		printf 'kernelversion:\n\t@echo 6.12.0\n' >Makefile
		printf 'a\nb\n' >a.c
		printf 'x\n' >z.c
		# a maintainer for --m, a list for --l (perl, not shell, expands it)
		mkdir scripts
		# shellcheck disable=SC2016
		printf '%s\n' 'print((grep { $_ eq "--m" } @ARGV) ? "Some Maintainer <maint\@example.org>\n" : "list\@example.org\n");' \
			>scripts/get_maintainer.pl
		git add -A
		git commit -q -m pristine
		git tag pristine
		git checkout -q -b blkctx
		printf 'a\nb\nc\n' >a.c
		printf 'y\n' >z.c
		git commit -q -am "block: a change" -m "Because." \
			-m "Signed-off-by: blkctx developers <devel@blkctx.invalid>"
		echo 1 >.git/blkctx-source
	)
}

# sc_tree_step T CODE ARGS...: python3 CODE ARGS with "tree", a
# tree_step.Tree of the scratch repository and cache of sc_tree T, and
# "run" to call a function as a command's main (a Failure said, status 1).
# A status other than 0 is printed: a case's $(...) must not end the
# selfcheck under set -e.
sc_tree_step() {
	local t=$1 code=$2
	shift 2
	BLKCTX_CACHE=$t/cache BLKCTX_TARBALL=/nonexistent PYTHONPATH=$REPO/tools/lib \
		python3 -B -c "import sys, tree_step
tree = tree_step.Tree(sys.argv[1] + '/repo', sys.argv[1] + '/cache', '/nonexistent')
def run(function, *args):
    return tree_step.common.run_command('step', lambda: function(*args) or 0)
$code" "$t" "$@" || echo "status $?"
}

# prepare: a new source version never deletes commits not exported; the
# commands that use the tree refuse one older than the patch files.
sc_prepare() {
	local t=$SC_TMP/prep rc
	sc_tree "$t"
	rc=$(sc_tree_step "$t" 'tree.record()
with open(tree.dot_git("blkctx-applied-head"), "w") as f:
    f.write(tree.git("rev-parse", "HEAD~1"))
tree.tarball_version = lambda: "2"
def extracted():
    print("extracted again")
    sys.exit(1)
tree.make_pristine = extracted
print(run(tree.prepare), tree.git("log", "-1", "--format=%s").strip())' 2>/dev/null)
	sc_same "prepare: a new source keeps commits not exported" "1 block: a change" "$rc"
	# --force, with a commit not exported: source version 1 is the tree's
	local source want what
	while IFS='|' read -r source want what; do
		sc_tree "$t-$source"
		rc=$(sc_tree_step "$t-$source" 'tree.record()
with open(tree.dot_git("blkctx-applied-head"), "w") as f:
    f.write(tree.git("rev-parse", "HEAD~1"))
tree.tarball_version = lambda: sys.argv[2]
tree.make_pristine = lambda: print("extracted again")
tree.apply_series = lambda: print("applied")
print(run(tree.prepare, True))' "$source" 2>/dev/null | paste -sd ' ')
		sc_same "prepare --force: $what" "$want" "$rc"
	done <<'CASES'
2|extracted again applied 0|a new source is extracted again
1|applied 0|the same source drops commits not exported (CI's prepare)
CASES
	# the cover letter's body as it is, byte for byte: another encoding, a
	# carriage return, a form feed
	rc=$(sc_tree_step "$t-1" 'import os
os.makedirs(tree.repo + "/series", exist_ok=True)
with open(tree.repo + "/series/0000-cover-letter.patch", "wb") as f:
    f.write(b"Subject: [PATCH 0/1] caf\xe9\n\ncaf\xe9\r\nform\x0cfeed\n\nblkctx developers (1):\n")
print(repr(tree.cover_subject().encode("utf-8", "surrogateescape")),
      repr(tree.cover_body().encode("utf-8", "surrogateescape")))' 2>&1)
	sc_same "prepare: the cover letter's subject and body, byte for byte" \
		"b'caf\\xe9' b'caf\\xe9\\r\\nform\\x0cfeed'" "$rc"
	rc=$(sc_tree_step "$t" 'tree.tarball_version = lambda: "1"
print(run(tree.prepare), tree.git("log", "-1", "--format=%s").strip())' 2>&1)
	sc_same "prepare: the same source with commits not exported is refused" \
		"blkctx: error: $t/cache/linux has work that is not exported (commit it and run tools/blkctx export, or use prepare --force to drop it)
1 block: a change" "$rc"
	# a tree without the record of its last prepare or export (interrupted,
	# or made by an older prepare) holds nothing to lose only at pristine
	sc_tree "$t-norecord"
	rc=$(sc_tree_step "$t-norecord" 'tree.tarball_version = lambda: "1"
tree.apply_series = lambda: print("applied")
print(run(tree.prepare))
tree.git("reset", "-q", "--hard", "pristine")
print(run(tree.prepare))' 2>&1 | sed "s|$t|T|g")
	sc_same "prepare: without a record, a commit beyond pristine is kept" \
		"blkctx: error: T-norecord/cache/linux has work that is not exported (commit it and run tools/blkctx export, or use prepare --force to drop it)
1
applied
0" "$rc"
	# the Debian rules and what is left at the end of them go; git then
	# sees the tree's own files
	rc=$(sc_tree_step "$t" 'print(tree_step.gitignore_without_debian(sys.argv[2]), end="")' \
		$'.*\n!.gitignore\n\n#\n# Debian packaging: ignore everything at the top level, since it isn\'t\n#\n/*\n!/debian/\n')
	sc_same "prepare: Debian's .gitignore rules go" $'.*\n!.gitignore' "$rc"
	rc=$(sc_tree_step "$t" 'def current():
    tree_step.common.tree_current(tree.tree, tree.repo, tree.tarball)
    print("current")
print(run(current))
with open(tree.dot_git("blkctx-applied"), "w") as f:
    f.write("stale\n")
print(run(current))' 2>/dev/null)
	sc_same "the tree must hold the patch files as they are" "current
0
1" "$rc"
}

# sc_guests T CODE ARGS...: python3 CODE ARGS with selftests_step as "st",
# on the scratch tree of sc_tree T whose x86_64 KUnit kernel was built from
# the tree as it is, with stand-ins for what needs a kernel: the targets, the
# options, QEMU's parameters, an initramfs build that prints "built", and a
# judge that passes; "base" the settings of a plain run, "run" a function
# as a command's main.
sc_guests() {
	local t=$1 code=$2 kdir=$1/cache/build/kunit-x86_64
	shift 2
	mkdir -p "$kdir/arch/x86/boot"
	: >"$kdir/arch/x86/boot/bzImage"
	python3 -B "$LIB/common.py" state "$t/cache/linux" >"$kdir/.blkctx-tree"
	BLKCTX_CACHE=$t/cache TMPDIR=$t PYTHONPATH=$REPO/tools/lib python3 -B -c "import os, sys
import common, guest, qemu_params, selftests_step as st
common.tree_current = lambda: None
common.report = lambda *counts: None
st.targets = lambda spec, tree=None: [('block', sys.argv[1])]
st.missing_kconfig = lambda config, arch, directories: []
qemu_params.load = lambda tree, config: qemu_params.QemuParams(
    'qemu', 'arch/x86/boot/bzImage', 'console=ttyS0', 'stdio', [])
def make_initramfs(arch, out, settings, guest_dir=None):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        f.write('initramfs for ' + arch)
    print('built', flush=True)
st.make_initramfs = make_initramfs
st.judged = lambda *args: st.Counts(1, 0, 0)
base = st.Settings('kunit', 900, 120, 'block', '', '1', 'user=1', [])
def run(function, *args):
    return common.run_command('step', lambda: function(*args) or 0)
$code" "$t" "$@" 2>&1 || echo "status $?"
}

# The guests of the selftests command: the kernel they boot, the initramfs
# they share, their command lines, the choice of guests and tests.
sc_selftests() {
	local t=$SC_TMP/guests rc
	sc_tree "$t"
	rc=$(sc_guests "$t" 'guest.boot_guest = lambda *args: print("booted") or 0
with open(os.path.join(common.TREE, "a.c"), "a") as f:
    f.write("change\n")
print(*st.run_guest("x86_64", base, st.GUESTS[0]))' | grep -o '^0 1 0\|^booted\|was not built from the tree as it is now')
	git -C "$t/cache/linux" checkout -q a.c
	sc_same "guest: a kernel built from another state of the tree is refused" \
		"was not built from the tree as it is now
0 1 0" "$rc"
	# one initramfs per architecture, built by the first guest to boot
	# (the first boots the cache's, the others a copy of their own, which
	# is gone at the end: another run may build the cache's again)
	rc=$(sc_guests "$t" 'import glob
def boot(arch, tree, config, kernel, initrd, append, log, *rest):
    print("booted", os.path.basename(log), open(initrd).read(),
          "(copy):" if os.path.basename(initrd).startswith("blkctx-initramfs.") else "(cache):",
          append.split(" ", 3)[3], flush=True)
    return 0
guest.boot_guest = boot
st.GUESTS = [st.Guest("main"), st.Guest("one", "1", "", "block"),
             st.Guest("two", "0", "mmc_emu.cqe=1 x=2", "block")]
print("status", run(st.command_selftests, ["x86_64"], base))
print("left:", glob.glob(sys.argv[1] + "/blkctx-initramfs.*"))' | grep -v '^blkctx: selftests: booting' |
		sed 's/ (initramfs [0-9]*s, boot and run [0-9]*s)$//')
	sc_same "selftests: one initramfs per architecture, each guest's command line" \
		"built
booted selftests-x86_64.log initramfs for x86_64 (cache): mmc_core.contexts=1 user=1
selftests: x86_64: 1 passed, 0 failed, 0 skipped
booted selftests-x86_64-one.log initramfs for x86_64 (copy): mmc_core.contexts=1 user=1 blkctx.tests=block
selftests: x86_64: 1 passed, 0 failed, 0 skipped
booted selftests-x86_64-two.log initramfs for x86_64 (copy): mmc_core.contexts=0 mmc_emu.cqe=1 x=2 user=1 blkctx.tests=block
selftests: x86_64: 1 passed, 0 failed, 0 skipped
selftests: 3 passed, 0 failed, 0 skipped
status 0
left: []" "$rc"
	# BLKCTX_GUESTS picks guests (the first picked builds the initramfs),
	# BLKCTX_SELFTESTS replaces their tests, an unknown guest is refused,
	# a failure of one guest fails the command
	rc=$(sc_guests "$t" 'def boot(arch, tree, config, kernel, initrd, append, log, *rest):
    print("booted", os.path.basename(log), append.split("blkctx.tests=")[-1], flush=True)
    return 0
guest.boot_guest = boot
st.GUESTS = [st.Guest("main"), st.Guest("one", "1", "", "block"),
             st.Guest("two", "0", "", "block"), st.Guest("three", "1", "", "mmc")]
for guests, tests in (("two,three", ""), ("three", "block:x"), ("main,four", "")):
    os.environ.update(BLKCTX_GUESTS=guests, BLKCTX_SELFTESTS=tests)
    print("status", run(st.command_selftests, ["x86_64"], st.Settings.from_environment()))
st.judged = lambda *args: st.Counts(1, 1, 0)
print("status", run(st.command_selftests, ["x86_64"], base._replace(guests=["one"])))' |
		grep -v '^blkctx: selftests: booting\|^selftests: x86_64')
	sc_same "selftests: BLKCTX_GUESTS and BLKCTX_SELFTESTS choose guests and tests" \
		"built
booted selftests-x86_64-two.log block
booted selftests-x86_64-three.log mmc
selftests: 2 passed, 0 failed, 0 skipped
status 0
built
booted selftests-x86_64-three.log block:x
selftests: 1 passed, 0 failed, 0 skipped
status 0
blkctx: error: BLKCTX_GUESTS: no guest \"four\"; the guests are: main,one,two,three
status 1
built
booted selftests-x86_64-one.log block
selftests: 1 passed, 1 failed, 0 skipped
status 1" "$rc"
	# kselftest builds the targets in the tree seen through symlinks, with a
	# target from outside copied in; dot files only above selftests/
	mkdir -p "$t/src/tools/perf" "$t/src/tools/testing/foo" "$t/src/tools/testing/selftests/block" "$t/out"
	touch "$t/src/Makefile" "$t/src/tools/.x" "$t/src/tools/testing/selftests/lib.mk" \
		"$t/src/tools/testing/selftests/.hidden" "$t/src/tools/testing/selftests/block/Makefile" \
		"$t/out/Makefile"
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, selftests_step
tree = sys.argv[1] + "/src"
print(selftests_step.make_src(tree, sys.argv[1] + "/farm", [
    ("block", tree + "/tools/testing/selftests/block"), ("demo", sys.argv[1] + "/out")])[len(sys.argv[1]) + 1:])' \
		"$t" 2>/dev/null || echo "status $?"
		cd "$t/farm" && find . -mindepth 1 -printf '%P %y\n' | LC_ALL=C sort)
	sc_same "selftests: the tree through symlinks, a target from outside copied in" \
		"farm/tools/testing/selftests
Makefile l
tools d
tools/.x l
tools/perf l
tools/testing d
tools/testing/foo l
tools/testing/selftests d
tools/testing/selftests/block l
tools/testing/selftests/demo d
tools/testing/selftests/demo/Makefile f
tools/testing/selftests/lib.mk l" "$rc"
	# the initramfs: every file, in a stable order, and nothing left beside it
	mkdir -p "$t/stage/b" "$t/stage/a"
	touch "$t/stage/b/z" "$t/stage/a/y"
	ln -s /bin/busybox "$t/stage/sh"
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, selftests_step
selftests_step.pack(sys.argv[1] + "/stage", sys.argv[1] + "/out/i.cpio.gz")' "$t" 2>&1 ||
		echo "status $?"
		zcat "$t/out/i.cpio.gz" | cpio -it --quiet | paste -sd' '
		find "$t/out" -mindepth 1 -printf "%P\n" | LC_ALL=C sort)
	sc_same "selftests: the initramfs holds the stage in order, nothing is left beside it" \
		"a a/y b b/z sh
Makefile
i.cpio.gz" "$rc"
	# a /init that does not end as it must (a truncated file) is refused
	mkdir -p "$t/init/tools/guest"
	head -n -1 "$REPO/tools/guest/init" >"$t/init/tools/guest/init"
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, common, selftests_step
selftests_step.REPO = sys.argv[1]
print(common.run_command("init", lambda: selftests_step.write_init(sys.argv[1] + "/init", 120)))' \
		"$t/init" 2>&1; ls "$t/init")
	sc_same "selftests: an /init without its reset at the end is refused" \
		"blkctx: error: guest: tools/guest/init does not print the sentinel and reset at its end
1
tools" "$rc"
	# bench's one guest: its name, the kernel it asks for (no tree state
	# for a build that is not KUnit's), its parameters, and the user's
	mkdir -p "$t/cache/build/pristine-emu-x86_64/arch/x86/boot"
	: >"$t/cache/build/pristine-emu-x86_64/arch/x86/boot/bzImage"
	rc=$(BLKCTX_GUEST_APPEND=user=2 sc_guests "$t" 'def boot(arch, tree, config, kernel, initrd, append, log, timeout, *rest):
    print("booted", os.path.relpath(kernel, common.BUILD), os.path.basename(log),
          append.split(" ", 3)[3], timeout, flush=True)
    return 0
guest.boot_guest = boot
print("status", st.main(["guest", "x86_64", "--name", "bench-x", "--build", "pristine-emu",
                         "--targets", "t", "--append", "a=1 b=2", "--timeout", "7200"]))' |
		grep -v '^blkctx: selftests: booting\|^selftests: x86_64')
	sc_same "guest: bench's one guest, its kernel, log, parameters and timeout" \
		"built
booted pristine-emu-x86_64/arch/x86/boot/bzImage selftests-x86_64-bench-x.log mmc_core.contexts=1 a=1 b=2 user=2 7200
status 0" "$rc"
	# apt's lists checked by blkctx.sh's guest_apt_ready (a stand-in that
	# fails as die does): one failure reported, not the bash's too
	mkdir -p "$t/lib"
	# shellcheck disable=SC2016 # the stand-in's own expansions
	printf '%s\n' 'echo "$*"' 'echo "die 0 1 0" >>"${BLKCTX_RESULTS:-/dev/null}"' 'exit 1' \
		>"$t/lib/blkctx.sh"
	: >"$t/apt-results"
	rc=$(BLKCTX_RESULTS=$t/apt-results PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, common, selftests_step
common.LIB = sys.argv[1]
print("status", common.run_command("guest", lambda: selftests_step.apt_ready("arm")))' \
		"$t/lib" 2>&1; echo "reported: $(paste -sd, "$t/apt-results")")
	sc_same "guest: apt's lists for armhf missing: one failure reported" \
		"apt-ready armhf
blkctx: error: guest: apt has no armhf package lists (see above)
status 1
reported: die 0 1 0" "$rc"
	: >"$t/apt-results"
	rc=$(BLKCTX_RESULTS=$t/apt-results PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, common
common.LIB = sys.argv[1]
print("status", common.run_command("demo", lambda: common.run_setup("demo")))' \
		"$t/lib" 2>&1; echo "reported: $(paste -sd, "$t/apt-results")")
	sc_same "demo, bench: a setup that fails is one failure reported" \
		"setup
blkctx: error: demo: setup failed (see above)
status 1
reported: die 0 1 0" "$rc"
}

# Every Python command that uses the tree refuses one that series/, kunit/
# and selftests/ have moved past, before it runs anything; and kunit.py gets
# a cross compiler only where the architecture has one.
sc_stale_tree() {
	local t=$SC_TMP/stale out
	mkdir -p "$t/cache/linux"
	git -C "$t/cache/linux" init -q
	echo stale >"$t/cache/linux/.git/blkctx-applied"
	# kunit.py's architecture options: a cross compiler only where one is
	out=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import kunit_step
for arch in ("x86_64", "arm"):
    print(*(a for a in kunit_step.kunit_args(arch) if a.startswith(("--arch", "--cross"))))')
	sc_same "kunit: --arch, and --cross_compile only for arm" "--arch=x86_64
--arch=arm --cross_compile=arm-linux-gnueabihf-" "$out"
	out=$(BLKCTX_CACHE=$t/cache PYTHONPATH=$REPO/tools/lib python3 -B - 2>&1 <<'PY'
import shutil
import build_step, checkpatch_step, kunit_step, pahole_step, tree_step
shutil.which = lambda name: "/bin/true"
def ran(*args, **kwargs):
    print("ran")
    raise SystemExit(3)
kunit_step.run_arch = checkpatch_step.judge = pahole_step.ready = ran
import common
common.worktree = build_step.warnings_arch = ran
tree_step.Tree.recipients = ran
for module, argv in ((kunit_step, ["kunit"]), (checkpatch_step, ["checkpatch"]),
                     (pahole_step, ["pahole"]), (build_step, ["build-each"]),
                     (build_step, ["warnings"]),
                     (tree_step, ["mail", "--from=A B <a@b.c>", "/nonexistent/mail"])):
    print(argv[0], module.main(argv, lock=False))
PY
) || out+=" status $?"
	sc_same "every command that uses the tree refuses a stale one" "kunit 1
checkpatch 1
pahole 1
build-each 1
warnings 1
mail 1" "$(grep -v '^blkctx: error: series/, kunit/ or selftests/ changed since' <<<"$out")"
}

# patches: the files in git am's order, quiet when its reader stops early.
sc_patches() {
	local out
	out=$("$REPO/tools/blkctx" patches 2>&1 | sed -n '1p;$p'; echo "${PIPESTATUS[0]}")
	sc_same "patches: series/ first, selftests/ last" "series/0001 selftests/ 0" \
		"$(sed -E 's|^.*/(series/0001)-.*|\1|; s|^.*/(selftests/).*|\1|' <<<"$out" | paste -sd ' ')"
	# the reader closes its end before python3 has started
	out=$("$REPO/tools/blkctx" patches 2>&1 | { exec <&-; sleep 1; }; echo "${PIPESTATUS[0]}")
	sc_same "patches: a reader that stops early is no error" "0" "$out"
}

# export and mail: the same bytes whatever the user's git configuration.
sc_export() {
	local t=$SC_TMP/export mode
	sc_tree "$t"
	mkdir -p "$t/home"
	printf '[format]\n\theaders = "X-Personal: yes"\n\tsignOff = true\n[diff]\n\torderFile = %s\n\tnoprefix = true\n' \
		"$t/order" >"$t/home/.gitconfig"
	printf 'z.c\na.c\n' >"$t/order"
	for mode in plain personal; do
		(
			[ $mode = plain ] || export HOME=$t/home
			sc_tree_step "$t" 'import os, shutil
tree.record()
if run(tree.export):
    sys.exit(1)
shutil.copytree(tree.repo + "/series", sys.argv[2] + "/series")
sys.exit(run(tree.mail, sys.argv[2] + "/mail", "Mail Tester <tester@example.org>"))' \
				"$t/$mode" >/dev/null 2>&1
		) || echo "export or mail failed ($mode)" >"$t/$mode.failed"
	done
	# without the isolation, the personal config changes the patch; mail's
	# message ids are made of the time, and may fall in different seconds:
	# drop them (and the headers that repeat them, and the cover letter's
	# date, which is the time of the run) before comparing
	find "$t/plain" "$t/personal" -name '*.patch' -exec \
		sed -i '/^Message-Id:/d; /^In-Reply-To:/d; /^References:/d' {} +
	find "$t/plain" "$t/personal" -name '*0000-cover-letter.patch' -exec sed -i '/^Date:/d' {} +
	# no grep -q: git dies of SIGPIPE when grep stops reading early, and
	# pipefail then fails the test now and then
	if HOME=$t/home git -C "$t/cache/linux" format-patch --stdout -1 | grep X-Personal >/dev/null &&
		[ ! -e "$t/plain.failed" ] && [ ! -e "$t/personal.failed" ] &&
		diff -r "$t/plain" "$t/personal" >/dev/null; then
		sc_result "export and mail: the same bytes under a personal git config" 0
	else
		sc_result "export and mail: the same bytes under a personal git config" 1 \
			"$(cat "$t"/*.failed 2>/dev/null; diff -r "$t/plain" "$t/personal" 2>&1 | head -20)"
	fi
	# what export and mail refuse: the files changed but not the tree (export
	# unless forced), a
	# commit not exported, uncommitted changes, groups out of order; then
	# reorder folds the fixup and orders the groups, and export takes it
	rc=$(sc_tree_step "$t" 'import subprocess
sender = "Mail Tester <tester@example.org>"
def commit(subject, name="a.c"):
    with open(tree.tree + "/" + name, "a") as f:
        f.write(subject + "\n")
    tree.git("add", name)
    tree.git("commit", "-q", "-m", subject)
with open(tree_step.common.patch_files(tree.repo)[0], "a") as f:
    f.write("\n")
print("stale files", run(tree.mail, sys.argv[2] + "/1", sender))
print("stale files", run(tree.export))
print("forced", run(tree.export, True))
commit("mmc: a later change", "l.c")
print("not exported", run(tree.mail, sys.argv[2] + "/2", sender))
with open(tree.tree + "/a.c", "a") as f:
    f.write("uncommitted\n")
print("uncommitted", run(tree.export))
tree.git("checkout", "-q", "--", "a.c")
commit("mmc: add KUnit tests", "k.c")
commit("mmc: yet another change", "y.c")
print("order", run(tree.export))
print("patches", len(tree_step.common.patch_files(tree.repo)))
# reorder: the fixup folded into its commit, the groups in order
commit("fixup! mmc: a later change", "l.c")
commit("selftests: mmc: a test", "t.sh")
commit("block: last", "b.c")
print("reorder", run(tree.reorder))
print("fixup", "folded" if "fixup! mmc: a later change" in tree.git("show", "HEAD:l.c") else "lost")
print("export", run(tree.export), *(p.split("/")[-2] for p in tree_step.common.patch_files(tree.repo)))' "$t/refused" 2>&1 |
		sed -E "s|$t|T|g; s/^[0-9a-f]{7,40} /H /")
	sc_same "export and mail: what they refuse" \
		"blkctx: error: series/, kunit/ or selftests/ changed since T/cache/linux was prepared or exported: run tools/blkctx prepare to apply them (it refuses while the tree has commits that are not exported; export those first)
stale files 1
blkctx: error: series/, kunit/ or selftests/ changed since T/cache/linux was prepared or exported: export would overwrite that change; run tools/blkctx prepare to apply the files (it refuses while the tree has commits that are not exported), or export --force to replace the files with the tree's commits
stale files 1
blkctx: export: 1 patches written into series/, kunit/, selftests/
forced 0
blkctx: error: T/cache/linux has work that is not in series/, kunit/, selftests/: commit it and run tools/blkctx export first
not exported 1
blkctx: error: T/cache/linux has uncommitted changes: commit them first
uncommitted 1
blkctx: error: \"mmc: yet another change\" (series) comes after a later group: order the commits series, kunit, selftests
order 1
patches 1
H selftests: mmc: a test
H mmc: add KUnit tests
H block: last
H mmc: yet another change
H mmc: a later change
H block: a change
reorder 0
fixup folded
blkctx: export: 6 patches written into series/, kunit/, selftests/
export 0 series series series series kunit selftests" "$rc"
}

# apt-get update is tried three times, then the lists apt has are used;
# guest_apt_ready dies when they still lack the guest's architecture.
sc_apt() {
	local got
	got=$( (
		tries=0
		apt-get() { tries=$((tries + 1)); [ "$tries" -ge 3 ]; }
		sleep() { :; }
		apt_update 2>/dev/null && echo "returned after $tries"
	))
	sc_same "apt: an update that fails twice is tried a third time" "returned after 3" "$got"
	got=$( (
		apt-get() { return 100; }
		sleep() { :; }
		apt_update 2>&1 | grep -c "going on"
	))
	sc_same "apt: an update that keeps failing is a warning" "1" "$got"
	got=$( (
		dpkg() { case $1 in --print-architecture) echo amd64 ;; *) echo armhf ;; esac; }
		apt-cache() { return 100; }
		apt-get() { return 0; }
		id() { echo 0; }
		guest_apt_ready armhf 2>/dev/null
		echo reached
	)) || true
	sc_same "apt: no armhf lists after an update dies" "" "$got"
}

# The guests' packages as apt resolves them; a failed resolution is never
# cached as resolved.
sc_resolve() {
	local t=$SC_TMP/resolve rc
	mkdir -p "$t/bin"
	# a stand-in apt-get: it resolves only for an empty system of armhf
	# (an empty dpkg status, armhf the only architecture), and fails for
	# "broken" as apt does for a dependency it cannot meet
	cat >"$t/bin/apt-get" <<'EOF'
#!/bin/sh
empty=no arch=
for a; do
	case $a in
	Dir::State::status=*) [ -s "${a#*=}" ] || empty=yes ;;
	APT::Architectures=*) arch=${a#*=} ;;
	broken) echo "E: Unable to correct problems, you have held broken packages." >&2; exit 100 ;;
	esac
done
[ "$empty $arch" = "yes armhf" ] || { echo "E: not an empty armhf system" >&2; exit 100; }
echo "Inst libc6 (2.36-9 Debian:12.15/oldstable [armhf]) []"
echo "Inst libgcc-s1 (12.2.0-14 Debian:12.15/oldstable [armhf])"
echo "Conf libc6 (2.36-9 Debian:12.15/oldstable [armhf])"
echo "Inst busybox (1:1.35.0-4 Debian:12.15/oldstable [armhf])"
echo "Inst tzdata (2024a-0+deb12u1 Debian:12.15/oldstable [all])"
EOF
	chmod +x "$t/bin/apt-get"
	rc=$(PATH=$t/bin:$PATH PYTHONPATH=$REPO/tools/lib python3 -B -c 'import common, guest_root
print(*guest_root.resolve("armhf", ["busybox"]), sep="\n")
print(common.run_command("guest", lambda: guest_root.resolve("armhf", ["broken"])))
print(common.run_command("guest", lambda: guest_root.resolve("amd64", ["busybox"])))' 2>&1 ||
		echo "status $?")
	sc_same "guest: packages as apt resolves them for an empty system of the guest's architecture" \
		"busybox 1:1.35.0-4 armhf
libc6 2.36-9 armhf
libgcc-s1 12.2.0-14 armhf
tzdata 2024a-0+deb12u1 all
blkctx: error: guest: apt cannot install broken for armhf: E: Unable to correct problems, you have held broken packages.
1
blkctx: error: guest: apt cannot install busybox for amd64: E: not an empty armhf system
1" "$rc"
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, common, guest_root
def fails(darch, debs):
    raise common.Failure("guest: no armhf package provides libfoo")
path = sys.argv[1] + "/resolved"
print(common.run_command("guest", lambda: guest_root.resolved(path, "key", "armhf", fails)))
import os
print("cached" if os.path.exists(path) else "not cached")
with open(path, "w") as f:
    f.write("key\n\n")
print(*guest_root.resolved(path, "key", "armhf", lambda darch, debs: ["busybox 1:1.35.0-4 armhf"]))
print(*guest_root.resolved(path, "key", "armhf", fails))
with open(path, "wb") as f:
    f.write(b"key\n\xff\n")
print(*guest_root.resolved(path, "key", "armhf", lambda darch, debs: ["sqlite3 3.40.1-2 armhf"]))
# fetch: what is missing downloaded, what is no longer listed dropped
os.makedirs(sys.argv[1] + "/debs")
for name in ("old_1_armhf.deb", "kept_1_armhf.deb"):
    open(sys.argv[1] + "/debs/" + name, "w").close()
def download(directory, specs):
    print("download", *specs)
    for spec in specs:
        name, rest = spec.split(":", 1)
        arch, version = rest.split("=", 1)
        open(os.path.join(directory, guest_root.deb_file(name, version, arch)), "w").close()
    return True
guest_root.download = download
guest_root.fetch(sys.argv[1] + "/debs", ["kept 1 armhf", "new 1:2 armhf"])
print(*sorted(os.listdir(sys.argv[1] + "/debs")))' "$t" 2>&1 || echo "status $?")
	sc_same "guest: a failed resolution fails and is not cached; an empty or unreadable cached one is resolved again; fetch" \
		"blkctx: guest: no armhf package provides libfoo
blkctx: error: guest: cannot resolve the armhf packages busybox e2fsprogs mmc-utils sqlite3 and their dependencies
1
not cached
busybox 1:1.35.0-4 armhf
busybox 1:1.35.0-4 armhf
sqlite3 3.40.1-2 armhf
blkctx: guest: downloading new:armhf=1:2
download new:armhf=1:2
kept_1_armhf.deb new_1%3a2_armhf.deb" "$rc"
	# a program of the host's own copied with what it needs to run
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import os, sys, guest_root
root = sys.argv[1]
guest_root.copy_elf("/", root, "usr/bin/true", sys.implementation._multiarch, {})
interp, needed = guest_root.elf_needs(root + "/usr/bin/true")
triplet = sys.implementation._multiarch
print("interpreter", "copied" if interp and guest_root.real(root, interp) else "missing")
print("libraries", len(needed), "copied" if all(any(guest_root.real(root, d + "/" + lib)
      for d in ("lib/" + triplet, "usr/lib/" + triplet, "lib", "usr/lib")) for lib in needed)
      else "missing")' "$t/copy" 2>&1 || echo "status $?")
	sc_same "guest: a program with its interpreter and libraries" "interpreter copied
libraries 1 copied" "$rc"
	# symlinks resolved inside the root, a loop is no file
	mkdir -p "$t/root/usr/lib" "$t/root/lib"
	: >"$t/root/usr/lib/libc.so.6"
	ln -s ../usr/lib/libc.so.6 "$t/root/lib/libc.so.6"
	ln -s /lib/../usr/lib/libc.so.6 "$t/root/abs"
	ln -s loop2 "$t/root/loop1"
	ln -s loop1 "$t/root/loop2"
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, guest_root
for path in ("lib/libc.so.6", "/abs", "loop1", "lib/none"):
    print(guest_root.real(sys.argv[1], path))' "$t/root" 2>&1 || echo "status $?")
	sc_same "guest: paths in the packages, through their symlinks" "usr/lib/libc.so.6
usr/lib/libc.so.6
blkctx: guest: symlink loop at loop1
None
None" "$rc"
}

# sc_py_cli CODE ARGS...: python3 runs CODE with os, sys and tools/lib/cli.py
# imported, ARGS in sys.argv[1:].
sc_py_cli() {
	local code=$1
	shift
	PYTHONPATH=$REPO/tools/lib python3 -B -c "import os, sys, cli
$code" "$@"
}

# sc_cli ARGS...: tools/lib/cli.py's main on ARGS, with a git identity
# (SC_SENDER; empty: none) and the command it would run printed instead of
# run ("ran COMMAND ARGS", status 0); prints main's status, then its output.
sc_cli() {
	local out=$SC_TMP/cli.out rc=0
	mkdir -p "$SC_TMP/norepo"
	(
		unset GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL EMAIL
		if [ -n "${SC_SENDER:-}" ]; then
			GIT_COMMITTER_EMAIL=${SC_SENDER##*<}
			export GIT_COMMITTER_NAME=${SC_SENDER% <*} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL%>}
		fi
		HOME=$SC_TMP/norepo GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
			sc_py_cli 'cli.REPO = sys.argv[1]
def run(argv):
	print("ran", *argv)
	return 0
sys.exit(cli.main(sys.argv[2:], run=run))' "$SC_TMP/norepo" "$@"
	) >"$out" 2>&1 </dev/null || rc=$?
	echo $rc
	cat "$out"
}

# The front door: --help, and arguments rejected before any work (exit 2);
# what is accepted goes to blkctx.sh in one form.
sc_front_door() {
	local c rc want args SC_SENDER="Mail Tester <tester@example.org>"
	mkdir -p "$SC_TMP/full"
	: >"$SC_TMP/full/0001-keep.patch"
	for c in $(sc_py_cli 'print(*cli.COMMANDS)'); do
		rc=$(sc_cli "$c" --help)
		rc=$(head -2 <<<"$rc" | cut -d' ' -f1-3 | tr '\n' ' ')
		sc_same "front door: $c --help" "0 usage: tools/blkctx $c " "$rc"
	done
	while read -r want args; do
		# shellcheck disable=SC2086
		rc=$(sc_cli $args)
		rc=${rc%%$'\n'*}
		sc_same "front door: $args" "$want" "$rc"
	done <<CASES
2 kunit foo
2 kunit x86_64 --forse
2 prepare --forse
2 prepare --forc
2 test now
2 build-each x86_64 arm
2 build-each riscv
2 mail
2 mail a b
2 mail $SC_TMP/full
2 mail --reroll=0 $SC_TMP/new
2 mail --reroll=v2 $SC_TMP/new
2 mail --from=nobody $SC_TMP/new
2 kunit --reroll=2
2 nosuchcommand
0 kunit x86_64 arm
0 prepare --force
0 build-each --llvm arm
0 mail $SC_TMP/new
0 mail --reroll=3 $SC_TMP/new
0 help
CASES
	# what blkctx.sh is given: ARGS|what runs
	while IFS='|' read -r args want; do
		# shellcheck disable=SC2086
		rc=$(sc_cli $args)
		rc=$(sed -n 2p <<<"$rc")
		sc_same "front door: $args runs $want" "$want" "$rc"
	done <<CASES
kunit arm x86_64|ran kunit arm x86_64
prepare|ran prepare
build-each arm --llvm|ran build-each --llvm arm
mail --reroll 3 $SC_TMP/new|ran mail --reroll=3 --from=Mail Tester <tester@example.org> $SC_TMP/new
CASES
	rc=$(sc_cli mail "--from=Other One <other@example.org>" "$SC_TMP/new")
	rc=$(sed -n 2p <<<"$rc")
	sc_same "front door: mail --from= runs as that sender" \
		"ran mail --from=Other One <other@example.org> $SC_TMP/new" "$rc"
	rc=$(sc_cli mail -- --reroll=5)
	sc_same "front door: mail -- --reroll=5 (a DIR that looks like an option)" 2 "${rc%%$'\n'*}"
	rc=$(SC_SENDER="" sc_cli mail "$SC_TMP/new")
	sc_same "front door: mail without a sender (no git identity, no --from)" 2 "${rc%%$'\n'*}"
	rc=$(SC_SENDER="blkctx developers <devel@blkctx.invalid>" sc_cli mail "$SC_TMP/new")
	sc_same "front door: mail with the series' identity as git's" 2 "${rc%%$'\n'*}"
	# the settings that are seconds
	while read -r want args; do
		rc=$( (export "${args% *}"
			sc_cli "${args#* }"))
		rc=${rc%%$'\n'*}
		sc_same "front door: $args" "$want" "$rc"
	done <<'CASES'
2 BLKCTX_GUEST_TIMEOUT=15m selftests
2 BLKCTX_GUEST_TIMEOUT=0 demo
2 BLKCTX_GUEST_TEST_TIMEOUT=0 selftests
2 BLKCTX_PROGRESS_SECONDS=1m kunit
2 BLKCTX_STOP_SECONDS=x test
0 BLKCTX_PROGRESS_SECONDS= kunit
0 BLKCTX_GUEST_TIMEOUT=30 selftests
2 BLKCTX_BENCH_MAIN=2 bench
2 BLKCTX_BENCH_REPEAT=2.5 bench
2 BLKCTX_BENCH_SEEDS=0,1 bench
2 BLKCTX_BENCH_WARMUP=1.25 bench
2 BLKCTX_BENCH_GEOMETRIES=256 bench
2 BLKCTX_BENCH_CONTEXT_IDS=16 bench
0 BLKCTX_BENCH_GEOMETRIES= bench
0 BLKCTX_BENCH_DISCARD=1,0 bench
0 BLKCTX_BENCH_MAIN=2 kunit
CASES
	# what runs: blkctx.sh in cli.py's process, with SIGPIPE and SIGXFSZ at
	# their defaults again (Python ignores both, and exec keeps that), so that
	# a pipeline in the shell ends when its reader does
	mkdir -p "$SC_TMP/cli-lib"
	printf '%s\n' 'echo "args $*"' 'sed -n "s/^SigIgn:[[:space:]]*//p" /proc/$$/status' \
		>"$SC_TMP/cli-lib/blkctx.sh"
	rc=$(BLKCTX_CACHE=$SC_TMP/cli-cache sc_py_cli 'cli.LIB = sys.argv[1]
cli.main(["setup"])' "$SC_TMP/cli-lib" 2>&1)
	# bits 13 and 25 of the mask: SIGPIPE, SIGXFSZ
	sc_same "front door: blkctx.sh runs with the arguments, SIGPIPE and SIGXFSZ not ignored" \
		"args setup; 0 0" \
		"$(head -1 <<<"$rc"); $((0x$(sed -n 2p <<<"$rc") >> 12 & 1)) $((0x$(sed -n 2p <<<"$rc") >> 24 & 1))"
	# a reader of help that stops early ends it as it ended bash: SIGPIPE,
	# no traceback
	rc=$(sc_py_cli 'r, w = os.pipe()
os.close(r)
os.dup2(w, 1)
sys.exit(cli.main(["help"]))' 2>&1
		echo "status $?")
	sc_same "front door: help into a closed pipe" "status 141" "$rc"
	# every command of cli.py's table is one of blkctx.sh's or one written
	# in Python, and no other (but for blkctx.sh's own: bootstrap, and
	# apt-ready for the Python)
	sc_same "front door: cli.py's commands are blkctx.sh's and the Python ones" \
		"$( (declare -f main | sed -n 's/^[[:space:]]*\([a-z][a-z-]*\))$/\1/p' | grep -vxE 'bootstrap|apt-ready'
			sc_py_cli 'print(*cli.PYTHON_COMMANDS, sep="\n")') | sort)" \
		"$(sc_py_cli 'print(*cli.COMMANDS, sep="\n")' | sort)"
	# tools/blkctx itself, called by its path or from tools/ by its name
	sc_same "front door: tools/blkctx help, by path and by name" \
		"usage: tools/blkctx COMMAND [ARGS]   (tools/blkctx COMMAND --help)
usage: tools/blkctx COMMAND [ARGS]   (tools/blkctx COMMAND --help)" \
		"$("$REPO/tools/blkctx" help | head -1; cd "$REPO/tools" && bash blkctx help | head -1)"
	# one table of the architectures, read by both sides
	sc_same "front door: cli.py and blkctx.sh know the same architectures" "$ARCHES" \
		"$(sc_py_cli 'print(*cli.ARCHES)')"
	sc_same "setup: the cross compilers of tools/lib/arches" \
		"gcc-arm-linux-gnueabihf binutils-arm-linux-gnueabihf libc6-dev-armhf-cross" "$(arch_packages)"
}

# Where python3 is not installed yet (tools/blkctx runs blkctx.sh's
# bootstrap), setup runs alone or before test and demo, as a command of its
# own (here a stand-in blkctx.sh), and anything else, or a bad setting, is
# refused without doing anything.
sc_bootstrap() {
	local t=$SC_TMP/bootstrap rc
	mkdir -p "$t/bin" "$t/repo/tools/lib"
	ln -sf "$(command -v rm)" "$t/bin/rm"
	ln -sf "$(command -v chmod)" "$t/bin/chmod"
	cat >"$t/repo/tools/lib/blkctx.sh" <<EOF
echo "setup ran: \$*"
case \$SC_SETUP in
fails) exit 1 ;;
installs) printf '#!/bin/sh\necho python3 ran "\$@"\n' >"$t/bin/python3"
	chmod +x "$t/bin/python3" ;;
esac
EOF
	# how setup behaves|the environment|the arguments|what happens
	while IFS='|' read -r mode env args want; do
		rm -f "$t/bin/python3"
		# shellcheck disable=SC2086
		rc=$( (
			[ -z "$env" ] || export "${env?}"
			PATH=$t/bin BUILD=$SC_TMP REPO=$t/repo
			do_setup() { echo "setup ran in the bootstrap"; }
			SC_SETUP=$mode do_bootstrap $args
		) 2>&1 </dev/null
			echo "status $?")
		rc=${rc//$t\/repo\//}
		rc=${rc//$'\n'/ }
		sc_same "bootstrap without python3: ${env:+$env }$args (setup $mode)" "$want" "$rc"
	done <<'CASES'
passes||setup|setup ran in the bootstrap status 0
passes||kunit --help|blkctx: python3 is not installed: tools/blkctx setup (as root) installs it status 2
passes||test --help|blkctx: python3 is not installed: tools/blkctx setup (as root) installs it status 2
fails||test|blkctx: test: setup first, for the python3 that runs the rest setup ran: setup total: 0 passed, 1 failed, 0 skipped blkctx: test: FAILED: setup status 1
passes||demo|blkctx: demo: setup first, for the python3 that runs the rest setup ran: setup blkctx: demo: FAILED: setup status 1
installs||test|blkctx: test: setup first, for the python3 that runs the rest setup ran: setup python3 ran tools/lib/cli.py test status 0
installs|BLKCTX_STOP_SECONDS=x|test|blkctx: test: BLKCTX_STOP_SECONDS: whole seconds, more than 0 (not "x") status 2
installs|BLKCTX_GUEST_TIMEOUT=15m|demo|blkctx: demo: BLKCTX_GUEST_TIMEOUT: whole seconds, more than 0 (not "15m") status 2
installs|BLKCTX_PROGRESS_SECONDS=0|test|blkctx: test: BLKCTX_PROGRESS_SECONDS: whole seconds, more than 0 (not "0") status 2
CASES
}

# Every BLKCTX_ variable the tools (and qemu_configs/) read is in --help's
# list, and the list names no other.
sc_env_doc() {
	local read doc
	# reads in code, not in comments
	read=$(cd "$REPO" && {
		cat tools/blkctx tools/lib/*.sh | grep -vE '^[[:space:]]*#' |
			grep -oE '\$\{?BLKCTX_[A-Z_]+'
		grep -ohE "(env(iron)?(\.get\(|\[)|setting\()[\"']BLKCTX_[A-Z_]+" qemu_configs/*.py tools/lib/*.py
	} | sed -E "s/^(\\$\\{?|(env(iron)?(\\.get\\(|\\[)|setting\\()[\"'])//" | grep -vx BLKCTX_CLEANUP | sort -u)
	doc=$(python3 -B "$REPO/tools/lib/cli.py" help | sed -n 's/^  \(BLKCTX_[A-Z_]*\) .*/\1/p' | sort -u)
	sc_same "environment: --help lists every BLKCTX_ variable the tools read, and only those" "" \
		"$(comm -23 <(echo "$read") <(echo "$doc") | sed 's/^/read, not listed: /'
		comm -13 <(echo "$read") <(echo "$doc") | sed 's/^/listed, not read: /')"
}

# mail: the sender signs off last; the check (b4 am, then every commit
# rebuilt) passes on what mail wrote and fails on a message without that
# sign-off; a reroll is numbered and compares with the version before.
sc_mail() {
	local t=$SC_TMP/mail rc
	sc_tree "$t"
	rc=$(sc_tree_step "$t" 'import glob, os, shutil, subprocess
sender = "Mail Tester <tester@example.org>"
tree.record()
def lines(pattern, *prefixes):
    for path in sorted(glob.glob(pattern)):
        for line in open(path).read().splitlines():
            if line.startswith(prefixes):
                print(line)
if run(tree.export) or run(tree.mail, sys.argv[2] + "/v1", sender):
    sys.exit(1)
print("v1 ok")
lines(sys.argv[2] + "/v1/0001-*.patch", "From: blkctx developers", "Signed-off-by:")
shutil.copytree(sys.argv[2] + "/v1", sys.argv[2] + "/bad")
path = glob.glob(sys.argv[2] + "/bad/0001-*.patch")[0]
text = open(path).read().replace("Signed-off-by: Mail Tester <tester@example.org>\n", "")
open(path, "w").write(text)
if run(tree.mail_check, sys.argv[2] + "/bad", sender):
    print("bad refused")
if run(tree.mail, sys.argv[2] + "/v2", sender, 2):
    sys.exit(1)
lines(sys.argv[2] + "/v2/v2-000[01]-*.patch", "Subject: [PATCH v2 1/1]", "Range-diff against v1:")
lines(sys.argv[2] + "/v1/0000-*.patch", "To: ", "Cc: ")
# a relative DIR is the caller'"'"'s, not the tree'"'"'s
os.mkdir(sys.argv[2] + "/here")
os.chdir(sys.argv[2] + "/here")
if run(tree.mail, "out", sender):
    sys.exit(1)
print(len(glob.glob(sys.argv[2] + "/here/out/*.patch")))
# a directory that holds files is refused, and they are kept
if run(tree.mail, sys.argv[2] + "/v1", sender):
    print("full refused")
print(len(glob.glob(sys.argv[2] + "/v1/*.patch")))' "$t" 2>/dev/null)
	sc_same "mail: the sender signs off last, b4 am gives back the commits, a reroll" \
		"v1 ok
From: blkctx developers <devel@blkctx.invalid>
Signed-off-by: blkctx developers <devel@blkctx.invalid>
Signed-off-by: Mail Tester <tester@example.org>
bad refused
Range-diff against v1:
Subject: [PATCH v2 1/1] block: a change
To: Some Maintainer <maint@example.org>
Cc: list@example.org
2
full refused
2" "$rc"
}

# The same lock taken by the commands written in Python (common.py lock).
sc_lock_py() {
	local t=$SC_TMP/lockpy out
	local take="import common; common.lock('kunit'); print('locked')"
	mkdir -p "$t"
	# test (here a parent) takes it and runs a step with its descriptor;
	# another run, without it, waits
	out=$(env -u BLKCTX_LOCK_FD BLKCTX_CACHE="$t" PYTHONPATH="$REPO/tools/lib" python3 -B -c "import os, subprocess, sys
import common
fd = common.lock('test')
sys.stdout.flush()
subprocess.run(['timeout', '10', sys.executable, '-B', '-c', \"$take\"], pass_fds=(fd,))
del os.environ['BLKCTX_LOCK_FD']
done = subprocess.run(['timeout', '2', sys.executable, '-B', '-c', \"$take\"])
print('status', done.returncode)" 2>&1)
	sc_same "lock (python): test's steps share it, another run waits, saying for whom" \
		"locked
blkctx: waiting for $t, in use by tools/blkctx test (pid P, user $(id -un), since X)
status 124" "$(printf '%s\n' "$out" | sed 's/(pid [0-9]*\(.*since \).*)/(pid P\1X)/')"
	# a descriptor of another file is no lock: it waits for the holder
	out=$(env -u BLKCTX_LOCK_FD BLKCTX_CACHE="$t" PYTHONPATH="$REPO/tools/lib" python3 -B -c "import os, subprocess, sys
import common
common.lock('test')
other = os.open(sys.argv[1], os.O_RDONLY)
os.environ['BLKCTX_LOCK_FD'] = str(other)
done = subprocess.run(['timeout', '2', sys.executable, '-B', '-c', \"$take\"], pass_fds=(other,),
                      stderr=subprocess.DEVNULL)
print('status', done.returncode)" "$REPO/tools/lib/arches" 2>&1)
	sc_same "lock (python): BLKCTX_LOCK_FD of another file holds nothing" "status 124" "$out"
	out=$(BLKCTX_CACHE=$t PYTHONPATH=$REPO/tools/lib python3 -B -c "$take
print(open('$t/.lock').read().split(' (')[0])" 2>&1)
	sc_same "lock (python): taken when free, and says who holds it" "locked
tools/blkctx kunit" "$out"
	# a child the command starts (descriptors inherited, as os.system
	# does) shares the lock: it does not wait for its own parent
	out=$( (
		unset BLKCTX_LOCK_FD
		BLKCTX_CACHE=$t PYTHONPATH=$REPO/tools/lib python3 -B -c "$take
import subprocess, sys
subprocess.run(['timeout', '5', sys.executable, '-B', '-c', \"$take\"], close_fds=False)"
	) 2>&1)
	sc_same "lock (python): a child of the command shares it" "locked
locked" "$out"
	# a user id without a passwd entry loses only its name
	out=$(BLKCTX_CACHE=$t/nouser PYTHONPATH=$REPO/tools/lib python3 -B -c "import getpass, os
def nobody():
    raise KeyError('getpwuid(): uid not found')
getpass.getuser = nobody
$take
print(open('$t/nouser/.lock').read().split(', user ')[1].split(',')[0] == 'uid %d' % os.getuid())" 2>&1 |
		tail -2 || echo "status $?")
	sc_same "lock (python): a user without a name still takes it" "locked
True" "$out"
}

# checkpatch: a Fixes: tag the tree cannot look up passes only with the id
# and subject tools/upstream-commits.txt lists.
sc_upstream_commits() {
	local f=$SC_TMP/fixes.patch rc
	rc=$(
		for tag in \
			'Fixes: 406e14808ee6 ("mmc: block: Remove error check of hw_reset on reset")' \
			'Fixes: 406e14808ee7 ("mmc: block: Remove error check of hw_reset on reset")' \
			'Fixes: 406e14808ee6 ("mmc: block: Remove error check")' \
			'Fixes: 406e14808ee6 ("mmc: block: Remove error check of hw_reset on reset") and more'; do
			printf 'Subject: [PATCH] a fix\n\n%s\n' "$tag" >"$f"
			PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, checkpatch_step
print("known" if checkpatch_step.upstream_commit_known(*sys.argv[1:]) else "unknown")' \
				"$f" "${tag:7:12}"
		done
	)
	sc_same "checkpatch: only a listed commit id with its subject passes" "known
unknown
unknown
unknown" "$rc"
}

# checkpatch_step.py's judge: one checkpatch run whose typed findings are judged: only
# ext4's Opt_ CamelCase and a listed upstream commit id are let through, and
# a checkpatch that fails with no finding fails (a fake checkpatch.pl prints
# what each patch file holds after "OUT:" and exits with its "RC:").
sc_checkpatch_judge() {
	local t=$SC_TMP/cpjudge name rc want got
	mkdir -p "$t/tree/scripts"
	cat >"$t/tree/scripts/checkpatch.pl" <<'FAKE'
my $f = $ARGV[-1];
open(my $fh, '<', $f) or die;
my $rc = 0;
while (<$fh>) {
	$rc = $1 if /^RC: (\d+)/;
	print $1, "\n" if /^OUT: (.*)/;
}
exit $rc;
FAKE
	local fixes='Fixes: 406e14808ee6 ("mmc: block: Remove error check of hw_reset on reset")'
	local unknown="OUT: WARNING:UNKNOWN_COMMIT_ID: Unknown commit id '406e14808ee6', maybe rebased or not pulled?"
	printf 'RC: 0\n' >"$t/clean.patch"
	printf '%s\nRC: 1\n%s\nOUT: CHECK:CAMELCASE: Avoid CamelCase: <Opt_context_policy>\nOUT: total: 0 errors, 1 warnings, 1 checks\n' \
		"$fixes" "$unknown" >"$t/allowed.patch"
	printf 'RC: 1\nOUT: CHECK:CAMELCASE: Avoid CamelCase: <ContextPolicy>\n' >"$t/camel.patch"
	printf '%s\nRC: 1\n%s\nOUT: WARNING:LONG_LINE: line length of 101 exceeds 100 columns\n' \
		"$fixes" "$unknown" >"$t/fixes-plus.patch"
	printf 'Fixes: 406e14808ee6 ("another subject")\nRC: 1\n%s\n' "$unknown" >"$t/unlisted.patch"
	printf 'RC: 2\nOUT: Traceback (most recent call last):\n' >"$t/crashed.patch"
	printf 'Fixes: 406e14808ee6 ("another subject")\nRC: 1\n%s\nOUT: CHECK:CAMELCASE: Avoid CamelCase: <Opt_context_policy>\n' \
		"$unknown" >"$t/unlisted-plus.patch"
	printf 'RC: 1\nOUT: CHECK:CAMELCASE: Avoid CamelCase: <Opt_contextPolicy>\n' >"$t/camel-opt.patch"
	while read -r name want; do
		got=$(if python3 -B "$REPO/tools/lib/checkpatch_step.py" judge "$t/tree" "$t/$name.patch" \
			>/dev/null 2>&1; then echo pass; else echo fail; fi)
		sc_same "checkpatch judged: $name" "$want" "$got"
	done <<'CASES'
clean pass
allowed pass
camel fail
fixes-plus fail
unlisted fail
crashed fail
unlisted-plus fail
camel-opt fail
CASES
}

# pahole_step.py: the size pahole prints, and the judgement: the same size
# passes, a grown struct or one pahole cannot find fails (a fake pahole
# prints a size by the object's name: 136 for same.o and old.o, 144 for
# grown.o, nothing for gone.o).
sc_pahole_judge() {
	local t=$SC_TMP/pahole pristine patched want
	mkdir -p "$t/bin"
	cat >"$t/bin/pahole" <<'FAKE'
#!/bin/sh
case $3 in
*/same.o | */old.o) printf 'struct bio {\n\tint x;\n\t/* size: 136, cachelines: 3, members: 20 */\n};\n' ;;
*/grown.o) printf 'struct bio {\n\t/* size: 144, cachelines: 3, members: 21 */\n};\n' ;;
esac
FAKE
	chmod +x "$t/bin/pahole"
	touch "$t/same.o" "$t/old.o" "$t/grown.o" "$t/gone.o"
	while read -r pristine patched want; do
		sc_same "pahole judged: $pristine against $patched" "$want" \
			"$(PATH=$t/bin:$PATH PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, pahole_step
line, ok = pahole_step.compare("x86_64", "bio", pahole_step.size("bio", [sys.argv[1]]),
                               pahole_step.size("bio", [sys.argv[2]]))
print(line.split(": ", 2)[2], ok)' "$t/$pristine" "$t/$patched" 2>&1)"
	done <<'CASES'
old.o same.o 136 bytes, as in the pristine tree True
old.o grown.o 144 bytes, pristine 136: FAILED False
old.o gone.o ? bytes, pristine 136: FAILED False
gone.o gone.o ? bytes, pristine ?: FAILED False
CASES
	sc_same "pahole: the first object that has the struct" "136" \
		"$(PATH=$t/bin:$PATH python3 -B "$REPO/tools/lib/pahole_step.py" size bio "$t/gone.o" \
			"$t/missing.o" "$t/old.o" "$t/grown.o")"
}

# The commands written in Python, driven with stand-ins: kunit's start and
# totals, the record of the tree a kernel was built from, the patch list
# and its digest, and a child's output copied to a log.
sc_py_steps() {
	local t=$SC_TMP/pysteps out
	mkdir -p "$t/cache"
	out=$(BLKCTX_CACHE=$t/cache BLKCTX_RESULTS=$t/results PYTHONPATH=$REPO/tools/lib \
		python3 -B -c 'import sys, kunit_step; print("status", kunit_step.main(["kunit"]))' 2>&1)
	sc_same "kunit: without a tree it fails, saying why, and reports it" \
		"blkctx: error: no tree: run tools/blkctx prepare
status 1
die 0 1 0" "$out
$(cat "$t/results" 2>&1)"
	out=$(BLKCTX_CACHE=$t/cache PYTHONPATH=$REPO/tools/lib python3 -B - 2>/dev/null <<'PY'
import common, kunit_step
common.tree_current = lambda: None
def runs(results):
    def run_arch(arch, kunit):
        return results[arch]
    return run_arch
for results in ({"x86_64": (2, 0, 1, True), "arm": (2, 0, 0, True)},
                {"x86_64": (2, 0, 0, True), "arm": (1, 1, 0, False)}):
    kunit_step.run_arch = runs(results)
    print("status", kunit_step.command_kunit([]))
PY
)
	sc_same "kunit: the total over the architectures, failed when one failed" \
		"kunit: 4 passed, 0 failed, 1 skipped
status 0
kunit: 3 passed, 1 failed, 0 skipped
status 1" "$out"
	# a stand-in kunit.py in a git tree: the record is written after a build
	# that passed or a run that booted, never kept from before
	mkdir -p "$t/cache/linux/tools/testing/kunit"
	cat >"$t/cache/linux/tools/testing/kunit/kunit.py" <<'FAKE'
import os, sys
build = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--build_dir=")][0]
if os.environ.get("SC_TAP"):
    open(build + "/test.log", "w").write("TAP version 14\n")
sys.exit(int(os.environ["SC_STATUS"]))
FAKE
	git -C "$t/cache/linux" init -q
	git -C "$t/cache/linux" add -A
	git -C "$t/cache/linux" -c user.name=t -c user.email=t@t commit -q -m t
	out=$(for c in "build 0 -" "build 2 -" "run 1 tap" "run 1 -" "config 0 -"; do
		read -r sub status tap <<<"$c"
		mkdir -p "$t/cache/build/kunit-x86_64"
		echo stale >"$t/cache/build/kunit-x86_64/.blkctx-tree"
		SC_STATUS=$status SC_TAP=${tap#-} BLKCTX_CACHE=$t/cache PYTHONPATH=$REPO/tools/lib \
			python3 -B -c 'import sys, common, kunit_step
st = kunit_step.kunit_py("x86_64", sys.argv[1], out=open("/dev/null", "w"))
try:
    rec = open(kunit_step.build_dir("x86_64") + "/.blkctx-tree").read().strip()
except OSError:
    rec = "none"
print(sys.argv[1], st, "current" if rec == common.tree_state() else rec)' "$sub" 2>&1
	done)
	sc_same "kunit: a kernel records the tree only when built or booted" \
		"build 0 current
build 2 none
run 1 current
run 1 none
config 0 stale" "$out"
	# a guest's kernel that cannot be built (kunit.py fails) stops the command
	# that boots it
	local built
	: >"$t/built-results"
	built=$(SC_STATUS=2 BLKCTX_CACHE=$t/cache BLKCTX_RESULTS=$t/built-results PYTHONPATH=$REPO/tools/lib \
		python3 -B -c 'import common, kunit_step
def boot():
    kunit_step.build("x86_64", "demo")
    print("went on")
print("status", common.run_command("demo", boot))' 2>/dev/null)
	sc_same "kunit: a guest's kernel that cannot be built stops the command" \
		"status 1, reported die 0 1 0" "$built, reported $(cat "$t/built-results")"
	# the patch list and its digest: series/, kunit/, selftests/ in order, no
	# cover letter, every byte and the tarball's version
	mkdir -p "$t/repo/series" "$t/repo/kunit" "$t/repo/selftests"
	printf 'c\n' >"$t/repo/series/0000-cover-letter.patch"
	printf 's2\n' >"$t/repo/series/0002-b.patch"
	printf 's1\n' >"$t/repo/series/0001-a.patch"
	printf 'k\n' >"$t/repo/kunit/0003-k.patch"
	printf 't\n' >"$t/repo/selftests/0004-t.patch"
	printf 'n\n' >"$t/repo/selftests/notes.txt"
	printf '6.12.1\n' >"$t/tarball.version"
	sc_same "patch files: in order, without the cover letter" \
		"series/0001-a.patch series/0002-b.patch kunit/0003-k.patch selftests/0004-t.patch" \
		"$(python3 -B "$REPO/tools/lib/common.py" files "$t/repo" | sed "s|$t/repo/||" | paste -sd' ')"
	sc_same "patch files: the digest of their bytes and the tarball's version" \
		"$(printf 's1\ns2\nk\nt\n6.12.1\n' | sha256sum | cut -c1-16)" \
		"$(python3 -B "$REPO/tools/lib/common.py" digest "$t/repo" "$t/tarball")"
	# a child's output, through procs.run's tee: ours and the log's, and a
	# process it leaves behind holding the output is stopped
	out=$(BLKCTX_STOP_SECONDS=1 PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, procs
with open(sys.argv[1], "w") as log:
    for cmd in ("echo one; echo two >&2; exit 3", "sleep 30 & echo left"):
        print("status", procs.run(["sh", "-c", cmd], "x", 60, tee=log), flush=True)
print(open(sys.argv[1]).read().split())' "$t/tee.log" 2>/dev/null)
	sc_same "procs: a tee to our output and the log, whatever is left behind" \
		"one
two
status 3
left
status 0
['one', 'two', 'left']" "$out"
}

# bench's table on a canned console: the rows over seeds (mean, spread, the
# change against none, limit and gap, learned and its gap; seq, whose file
# is rewritten in place, is not compared with none), ctxbench's other lines
# and the kernel's ignored.
sc_bench_table() {
	local want
	want=$(cat <<'TABLE'
load   policy           runs    WAF        spread vs none  limit    gap learned  l.gap host pages   GC moves   erases  requests   merges open
db     none                2  1.300   1.200-1.400     +0%  1.000     0%   1.100    67%       1000        300       11       101       51  2.0
db     inode               2  1.150   1.100-1.200    -50%  1.000    50%   1.050    83%       1000        150        8       100       50 15.5
seq    none                2  1.150   1.100-1.200       -      -      -       -      -        500         75        2        51       10  2.0
TABLE
)
	sc_same "bench_table: means, spreads, gaps to the limit and learned" "$want" \
		"$(python3 -B "$LIB/bench_step.py" table "$REPO/tools/selfcheck/bench-console.log" 2>&1)"
}

# bench's other figures from canned consoles: the caption of a table, the
# isolation table (the same seed in two runs), the request counts over
# runs (fewest-most), the policies with and without journal_context.
sc_bench_figures() {
	local t=$SC_TMP/figures d=$REPO/tools/selfcheck rc
	mkdir -p "$t"
	sed 's/waf=1\.100 open_blocks=16/waf=1.125 open_blocks=16/; s/write_requests=100 write_merges=50 waf=1\.200 open_blocks=15/write_requests=97 write_merges=48 waf=1.200 open_blocks=15/' \
		"$d/bench-console.log" >"$t/b.log"
	rc=$(PYTHONPATH=$REPO/tools/lib python3 -B -c 'import os, sys, bench_step
a, b, table = sys.argv[1], sys.argv[2], sys.argv[2] + ".txt"
with open(table, "w") as f:
    f.write("# " + bench_step.console_lines(a, "seeds")[0] + "\n" + bench_step.table(a))
print(bench_step.caption(table))
sys.stdout.write(bench_step.isolation(a, b, "1"))
sys.stdout.write(bench_step.requests_table([("one", "none", [a]), ("two", "inode", [a, b])]))
for journal in ("1", "0"):
    os.environ.update(BLKCTX_BENCH_POLICIES="a,b", BLKCTX_BENCH_JOURNAL=journal)
    print(bench_step.policies_with_journal())' "$d/bench-console.log" "$t/b.log" 2>&1 ||
		echo "status $?")
	sc_same "bench: caption, isolation, request counts, policies" \
		"64 MiB card, 256 KiB erase blocks, 4 KiB pages, 7% spare (18 blocks), 15 streams; fs 80% full, discard on; warmup 1.0, counted 1.0 card sizes; seeds 1,2
load   policy             in order   reversed    diff
db     none                  1.200      1.200  +0.000
db     inode                 1.100      1.125  +0.025
writes                      one                    two
db                      100-102                 97-100
seq                       50-52                      -
seq-file                      7                      -

merges                      one                    two
db                        50-52                  48-50
seq                       10-11                      -
a,a+journal,b,b+journal
a,b" "$rc"
}

# bench-check's cases on a guest's console: a run of db and phone under
# none and inode passes when it printed the replay's verdict (exact), the
# learned WAF and a limit; both phone runs must have dropped caches and
# deleted photos.
sc_bench_check() {
	local t=$SC_TMP/bench-check d=$REPO/tools/selfcheck line rc
	mkdir -p "$t"
	cp "$d/bench-console.log" "$t/full.log"
	for line in "workload=phone policy=none" "workload=phone policy=inode"; do
		echo "    ctxbench: $line seed=1 waf=1.5 replay=exact learned_nand_pages=9 learned_waf=1.2 limit_nand_pages=8 limit_waf=1.0" >>"$t/full.log"
		echo "    ctxbench: phone: transactions=9 caches_dropped=2 photos=2 photos_deleted=1" >>"$t/full.log"
	done
	sed 's/\(workload=db policy=none seed=1 .*\)replay=exact/\1replay=differs/' "$t/full.log" >"$t/differs.log"
	grep -v 'policy=inode' "$t/full.log" >"$t/noinode.log"
	rc=$(for line in "$d/bench-console.log" "$t/full.log" "$t/differs.log" "$t/noinode.log"; do
		PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, bench_step
cases = bench_step.Cases()
bench_step.guest_cases(cases, sys.argv[1])
print(cases.passed, cases.failed)' "$line" 2>/dev/null || echo "status $?"
	done | paste -sd' ')
	sc_same "bench-check: the guest's runs (canned: no phone; all; a replay that differs; no inode)" \
		"2 3 5 0 4 1 3 2" "$rc"
	# the command: what it reports to test (each failed case once) and its
	# status, the replays and the guest stood in for
	rc=$(for line in "$t/full.log" "$d/bench-console.log"; do
		: >"$t/results"
		BLKCTX_RESULTS=$t/results PYTHONPATH=$REPO/tools/lib python3 -B -c 'import sys, bench_step
bench_step.setup_and_prepare = lambda: None
bench_step.kunit_step.build = lambda arch, who: None
def replays(cases):
    cases.case(True, "a replay", "")
    cases.case(False, "", "a replay")
bench_step.replay_cases = replays
bench_step.Bench.guest = lambda *args, **kwargs: sys.argv[1]
print("status", bench_step.main(["bench-check"], lock=False))' "$line" 2>/dev/null || echo "status $?"
		paste -sd, "$t/results"
	done)
	sc_same "bench-check: each failed case counted once, the status" \
		"status 1
bench-check-replay 1 1 0,bench-check 5 0 0
status 1
bench-check-replay 1 1 0,bench-check 2 3 0" "$rc"
}

do_selfcheck() {
	local t0
	t0=$(date +%s)
	# its cases die on purpose: that must not count in a test run
	unset BLKCTX_RESULTS
	# the scratch trees' commits are the series' (export and mail read it)
	export GIT_AUTHOR_NAME="blkctx developers" GIT_AUTHOR_EMAIL=devel@blkctx.invalid
	export GIT_COMMITTER_NAME="blkctx developers" GIT_COMMITTER_EMAIL=devel@blkctx.invalid
	SC_TMP=$(mktemp -d)
	cleanup_add "$SC_TMP"
	sc_shellcheck
	sc_kunit
	sc_guest
	sc_guest_boot
	sc_test_steps
	sc_warnings
	sc_kconfig
	sc_prepare
	sc_selftests
	sc_export
	sc_patches
	sc_stale_tree
	sc_mail
	sc_resolve
	sc_apt
	sc_front_door
	sc_bootstrap
	sc_env_doc
	sc_lock_py
	sc_progress
	sc_interrupt
	sc_test_interrupt
	sc_upstream_commits
	sc_checkpatch_judge
	sc_pahole_judge
	sc_py_steps
	sc_bench_table
	sc_bench_figures
	sc_bench_check
	echo "selfcheck: $SC_PASSED passed, $SC_FAILED failed ($(($(date +%s) - t0))s)"
	[ $SC_FAILED -eq 0 ]
}
