# shellcheck shell=bash
# KUnit through the tree's own kunit.py, one build directory per architecture;
# and the commands that run several steps: test and demo.

kunit_args() {
	local arch=$1
	echo --arch="${arch_linux[$arch]}" --kunitconfig="$REPO/kunitconfig" \
		--qemu_config="$REPO/qemu_configs/$arch.py" \
		--build_dir="$BUILD/kunit-$arch"
	[ -z "${arch_cc[$arch]}" ] || echo --cross_compile="${arch_cc[$arch]}"
}


kunit_py() {
	local arch=$1 sub=$2 stamp=$BUILD/kunit-$1/.blkctx-tree state rc=0
	local -a jobs=()
	shift 2
	# only run and build take --jobs
	case $sub in run | build) jobs=(--jobs="$JOBS") ;; esac
	mkdir -p "$BUILD/kunit-$arch"
	# the kernel records the tree it was built from (guest_arch checks it);
	# a build that fails leaves no record
	case $sub in run | build)
		state=$(tree_state)
		rm -f "$stamp" "$BUILD/kunit-$arch/test.log" ;;
	esac
	touch "$BUILD/kunit-$arch/.blkctx-started"
	# shellcheck disable=SC2046
	with_progress "kunit $sub $arch" "$BUILD/kunit-$arch" "$BUILD/kunit-$arch/.blkctx-started" - \
		env -C "$TREE" python3 tools/testing/kunit/kunit.py "$sub" $(kunit_args "$arch") "${jobs[@]}" \
		--make_options "CC=ccache ${arch_cc[$arch]}gcc" "$@" || rc=$?
	# run fails when a case fails, after building and booting the kernel
	if { [ "$sub" = build ] && [ $rc -eq 0 ]; } ||
		{ [ "$sub" = run ] && grep -q 'TAP version' "$BUILD/kunit-$arch/test.log" 2>/dev/null; }; then
		echo "$state" >"$stamp"
	fi
	return $rc
}

# kunit_config ARCH FILE: the .config kunit.py builds for ARCH, made again
# when kunitconfig or the QEMU config is newer.
kunit_config() {
	local arch=$1 file=$2 config=$BUILD/kunit-$1/.config
	if [ ! -f "$config" ] || [ "$REPO/kunitconfig" -nt "$config" ] ||
		[ "$REPO/qemu_configs/$arch.py" -nt "$config" ]; then
		kunit_py "$arch" config >/dev/null
	fi
	cp "$config" "$file"
}

# kunit_counts ARCH JSON STATUS [--log TEST_LOG --allow PATTERN]: count
# and judge what kunit.py wrote in JSON (--json=FILE) and exited with
# STATUS (tools/lib/kunit_results.py says how). Prints "passed failed
# skipped", says each failure on standard error.
kunit_counts() {
	python3 -B "$REPO/tools/lib/kunit_results.py" "$@"
}

# The WARN_ON_ONCE() of submit_bio_noacct() for a read that carries a stream,
# which blk_write_stream_limits.submission_checks_the_stream provokes.
KUNIT_EXPECTED_WARN='WARNING: CPU: [0-9]+ PID: [0-9]+ at block/blk-core\.c:[0-9]+ submit_bio_noacct\+'

KUNIT_PASSED=0
KUNIT_FAILED=0
KUNIT_SKIPPED=0

# Run every suite on one architecture and add its counts to the totals.
kunit_arch() {
	local arch=$1
	local log=$BUILD/kunit-$arch.log json=$BUILD/kunit-$arch.json rc=0 p f s
	say "kunit: $arch (log: $log)"
	mkdir -p "$BUILD"
	rm -f "$json"
	kunit_py "$arch" run --json="$json" 2>&1 | tee "$log" || rc=$?
	# a report of the kernel's detectors fails the run, but for the one WARN
	# that blk_write_stream_limits provokes on purpose (a read with a stream)
	read -r p f s <<<"$(kunit_counts "$arch" "$json" "$rc" \
		--log "$BUILD/kunit-$arch/test.log" --allow "$KUNIT_EXPECTED_WARN")"
	if [ -z "$s" ]; then
		say "kunit: $arch: FAILED tools/lib/kunit_results.py printed no counts"
		p=0 f=1 s=0
	fi
	echo "kunit: $arch: $p passed, $f failed, $s skipped"
	KUNIT_PASSED=$((KUNIT_PASSED + p))
	KUNIT_FAILED=$((KUNIT_FAILED + f))
	KUNIT_SKIPPED=$((KUNIT_SKIPPED + s))
	report_counts "kunit-$arch" "$p" "$f" "$s"
	[ "$rc" -eq 0 ] && [ "$f" -eq 0 ]
}

do_kunit() {
	local arch rc=0
	tree_current
	for arch in $(arch_list "$@"); do
		kunit_arch "$arch" || rc=1
	done
	echo "kunit: $KUNIT_PASSED passed, $KUNIT_FAILED failed, $KUNIT_SKIPPED skipped"
	return $rc
}

# The guests each architecture boots after the first, which runs every test
# with the card's contexts turned on (mmc_core.contexts=1): log suffix,
# mmc_core.contexts, more kernel parameters ("-" for none), the tests.
# mmc_test does not look at contexts, so it runs only in the first.  Where
# contexts are off, on a card without them, on a host without CMD23 and on
# cards whose context fields cannot be trusted, the tests that need contexts
# skip and those for a card without them run; the largest large unit checks
# the granularity; aggressive PM runtime-suspends the card between tests;
# a command queue engine host sends every read and write as a queued task
# (its context in CMD44) and runs the storm through CQE recovery; a card
# with boot partitions shows that they get no streams; a card whose erased
# memory reads as ones cannot zero by trimming, so ext4 writes its zeroes;
# parameters out of range ("+" joins several) leave no card at all, and so
# does a flash geometry the model cannot have (its probe fails).
SELFTEST_GUESTS=(
	"-nocontexts 0 - block,mmc:emmc_*"
	"-cardnocontexts 1 mmc_emu.max_context_id=0 block,mmc:emmc_*"
	"-nocmd23 1 mmc_emu.host_cmd23=0 mmc:emmc_contexts"
	"-capsreserved 1 mmc_emu.context_caps_reserved=1 mmc:emmc_contexts"
	"-emmc441 1 mmc_emu.ext_csd_rev=5 mmc:emmc_contexts"
	"-largeunit 1 mmc_emu.large_unit_size_mb=256 mmc:emmc_contexts,mmc:emmc_extcsd"
	"-runtimepm 1 mmc_emu.aggressive_pm=1 mmc:emmc_contexts"
	"-cqe 1 mmc_emu.cqe=1 block,mmc:emmc_*"
	"-boot 1 mmc_emu.boot_size_kb=4096 mmc:emmc_contexts"
	"-erasedones 1 mmc_emu.erased_ones=1 mmc:emmc_policies"
	"-badparams 1 mmc_emu.size_mb=0+mmc_emu.max_context_id=16+mmc_emu.large_unit_size_mb=0+mmc_emu.ext_csd_rev=9+mmc_emu.boot_size_kb=100 mmc:emmc_contexts"
	"-badftl 1 mmc_emu.ftl_block_kb=6 mmc:emmc_contexts"
)

# guest_names: main and the names of SELFTEST_GUESTS, without their "-".
guest_names() {
	local guest
	echo main
	for guest in "${SELFTEST_GUESTS[@]}"; do
		guest=${guest%% *}
		echo "${guest#-}"
	done
}

# guest_wanted NAME: BLKCTX_GUESTS is empty or names it.
guest_wanted() {
	[ -z "${BLKCTX_GUESTS:-}" ] || [[ ",$BLKCTX_GUESTS," == *",$1,"* ]]
}

do_selftests_both() {
	local arch guest suffix contexts append tests initrd use save name rc=0
	for name in ${BLKCTX_GUESTS:+${BLKCTX_GUESTS//,/ }}; do
		guest_names | grep -xF -- "$name" >/dev/null ||
			die "BLKCTX_GUESTS: no guest \"$name\"; the guests are: $(guest_names | paste -sd, -)"
	done
	tree_current
	for arch in $(arch_list "$@"); do
		# one initramfs per architecture: the guests differ only in the
		# kernel's command line
		initrd=$(mktemp "${TMPDIR:-/tmp}/blkctx-initramfs.XXXXXX")
		cleanup_add "$initrd"
		if guest_wanted main; then
			GUEST_LOG_SUFFIX="" GUEST_INITRD_SAVE=$initrd guest_arch "$arch"
			[ "$GUEST_ARCH_OK" -eq 1 ] || rc=1
		fi
		for guest in "${SELFTEST_GUESTS[@]}"; do
			read -r suffix contexts append tests <<<"$guest"
			guest_wanted "${suffix#-}" || continue
			[ "$append" != - ] || append=""
			append=${append//+/ }
			# the first to boot builds the initramfs (none built yet:
			# main not booted, or no kernel), the others boot it; tests
			# the user named replace the guest's own
			use=$initrd save=""
			[ -s "$initrd" ] || { use="" save=$initrd; }
			GUEST_LOG_SUFFIX=$suffix BLKCTX_GUEST_CONTEXTS=$contexts \
				BLKCTX_GUEST_APPEND=$append BLKCTX_SELFTESTS=${BLKCTX_SELFTESTS:-$tests} \
				GUEST_INITRD=$use GUEST_INITRD_SAVE=$save guest_arch "$arch"
			[ "$GUEST_ARCH_OK" -eq 1 ] || rc=1
		done
	done
	echo "selftests: $GUEST_PASSED passed, $GUEST_FAILED failed, $GUEST_SKIPPED skipped"
	return $rc
}

# do_test: tools/lib/runner.py runs the steps, each a tools/blkctx process of
# its own (BLKCTX_SELF replaces tools/blkctx, for selfcheck), and writes the
# closing line and the JSON results. On a fresh machine python3 came with
# the setup that tools/blkctx ran first (do_bootstrap); the runner runs it
# again, in seconds.
do_test() {
	local self=${BLKCTX_SELF:-$REPO/tools/blkctx} force=""
	# CI tests the patch files, whatever an earlier session left in the tree
	[ "${CI:-}" != true ] || force=--force-prepare
	run_child python3 -B "$REPO/tools/lib/runner.py" --blkctx "$self" \
		--json "$BUILD/test-results.json" ${force:+"$force"}
}

# kunit_build ARCH WHO: build the KUnit kernel that WHO's guest boots.
kunit_build() {
	local log=$BUILD/kunit-$1-build.log
	say "$2: building the $1 kernel"
	kunit_py "$1" build >"$log" 2>&1 || { tail -20 "$log" >&2; die "$2: the kernel does not build"; }
}

# The main job: boot the patched kernel with the emulated eMMC, make ext4,
# write files and show, from the card's log, which context each landed in.
do_demo() {
	local log=$BUILD/selftests-x86_64-demo.log
	do_setup
	do_prepare
	kunit_build x86_64 demo
	GUEST_LOG_SUFFIX=-demo BLKCTX_SELFTEST_TARGETS="demo=$REPO/tools/guest/demo" \
		guest_arch x86_64 >/dev/null
	# /init indents what a test prints by four spaces
	tr -d '\r' <"$log" | sed -n 's/^    \(ctxdemo: .*\)$/\1/p; s/^    \(file  .*\)$/\1/p; s/^    \([a-z]*\.[a-z0-9]* \{1,\}[0-9].*\)$/\1/p'
	[ "$GUEST_ARCH_OK" -eq 1 ] || die "demo: the guest run failed; see $log"
}
